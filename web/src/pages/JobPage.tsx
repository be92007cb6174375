/**
 * One job: its state and why, spec, timeline, resources, worker and log. The log and the state
 * follow the tab's stream (opened with `?job=ID` while this page is shown).
 */
import { useCallback, useEffect, useId, useLayoutEffect, useRef, useState, type ReactNode } from 'react';
import { api, ApiError, currentToken } from '../api.js';
import { StateChip } from '../components/StateChip.js';
import { ErrorAlert, Loading, TableWrap } from '../components/Status.js';
import { Age, Duration } from '../components/Time.js';
import { useApp } from '../context.js';
import { formatAmounts, formatDateTime, formatDuration, formatWhen } from '../format.js';
import { useDebounced, useStreamEvent, useTitle } from '../hooks.js';
import { Link, paths } from '../router.js';
import { stream } from '../stream.js';
import { isFinished, type Job, type JobEvent, type Role } from '../types.js';

/** The most log text kept on screen; older output is dropped from the top. */
const LOG_LIMIT = 2_000_000;

/** The caller's role per project, asked once per session. */
const roles = new Map<string, Promise<Role | 'admin' | null>>();
function roleIn(project: string): Promise<Role | 'admin' | null> {
  const key = `${currentToken() ?? ''}\n${project}`;
  let r = roles.get(key);
  if (!r) {
    r = api.project(project).then(
      (p) => p.role,
      () => null,
    );
    roles.set(key, r);
  }
  return r;
}

export function JobPage({ id }: { id: number }) {
  useTitle(`Job ${id}`);
  const { user, setProject } = useApp();
  const [job, setJob] = useState<Job | null>(null);
  const [events, setEvents] = useState<JobEvent[] | null>(null);
  const [error, setError] = useState<{ status: number; message: string } | null>(null);
  const [role, setRole] = useState<Role | 'admin' | null>(user.admin ? 'admin' : null);

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        const [j, ev] = await Promise.all([api.job(id, signal), api.jobEvents(id, signal)]);
        setJob(j);
        setEvents(ev);
        setError(null);
      } catch (e) {
        if (signal?.aborted) return;
        setError(
          e instanceof ApiError
            ? { status: e.status, message: e.message }
            : { status: 0, message: String(e) },
        );
      }
    },
    [id],
  );

  useEffect(() => {
    const abort = new AbortController();
    void load(abort.signal);
    return () => abort.abort();
  }, [load]);

  const project = job?.project;
  // A job's page makes its project the current one (the switcher, the Jobs link).
  useEffect(() => {
    if (project) setProject(project);
  }, [project, setProject]);
  useEffect(() => {
    if (!project || user.admin) return;
    let live = true;
    void roleIn(project).then((r) => {
      if (live) setRole(r);
    });
    return () => {
      live = false;
    };
  }, [project, user.admin]);

  // Follow this job on the stream while the page is open (once it is known to be visible: the
  // stream refuses a job the caller may not see).
  const visible = job !== null;
  useEffect(() => {
    if (!visible) return;
    stream.setJob(id);
    return () => stream.setJob(null);
  }, [id, visible]);

  const reload = useDebounced(() => void load(), 200, 1000);
  useStreamEvent('job', (n) => {
    if (n.id !== id) return;
    setJob((j) => j && { ...j, state: n.state, reason: n.reason });
    reload();
  });
  // A connection that follows this job opened after the page's first load: the stream switched
  // connections to carry its log, and a change between the two (a short job's end) came on
  // neither. So the page reads the job again once it follows it.
  useStreamEvent('open', ({ resync, job: following }) => {
    if (resync || following === id) reload();
  });

  if (error && !job) {
    return (
      <>
        <h1 tabIndex={-1}>Job {id}</h1>
        <ErrorAlert>
          {error.status === 404 ? `Job ${id} does not exist, or is not yours to see.` : error.message}
        </ErrorAlert>
      </>
    );
  }
  if (!job) {
    return (
      <>
        <h1 tabIndex={-1}>Job {id}</h1>
        <Loading what={`job ${id}`} />
      </>
    );
  }

  const mayCancel = role === 'admin' || role === 'owner' || role === 'member';
  return (
    <>
      <div className="page-head">
        <div>
          <h1 tabIndex={-1}>Job {job.id}</h1>
          <p className="job-name">{job.name}</p>
        </div>
        {!isFinished(job.state) && mayCancel && <CancelButton job={job} onCancelled={setJob} />}
      </div>
      <p className="status-line" role="status">
        <StateChip state={job.state} />
        <span className="reason">{job.reason}</span>
        {job.cancelRequested && !isFinished(job.state) && <span className="badge">cancel requested</span>}
      </p>
      {error && <ErrorAlert>{error.message}</ErrorAlert>}
      <div className="job-grid">
        <Spec job={job} />
        <div className="job-side">
          <Resources job={job} />
          <Worker job={job} />
        </div>
        <Timeline events={events} />
      </div>
      <Log job={job} />
    </>
  );
}

function CancelButton({ job, onCancelled }: { job: Job; onCancelled: (j: Job) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (job.cancelRequested) {
    return (
      <button type="button" className="button-danger" disabled>
        Cancelling…
      </button>
    );
  }
  return (
    <div className="cancel">
      <button
        type="button"
        className="button-danger"
        disabled={busy}
        onClick={() => {
          setBusy(true);
          setError(null);
          api.cancelJob(job.id).then(
            (j) => {
              setBusy(false);
              onCancelled(j);
            },
            (e: unknown) => {
              setBusy(false);
              setError(e instanceof ApiError ? e.message : String(e));
            },
          );
        }}
      >
        Cancel job
      </button>
      {error && <ErrorAlert>{error}</ErrorAlert>}
    </div>
  );
}

function Section({ title, children, className }: { title: string; children: ReactNode; className?: string }) {
  const id = useId();
  return (
    <section aria-labelledby={id} className={`card ${className ?? ''}`}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** An argv as a shell would read it back: `sh -c 'echo hi'`. */
function shellWords(argv: string[]): string {
  return argv
    .map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`))
    .join(' ');
}

function Spec({ job }: { job: Job }) {
  const env = Object.entries(job.env);
  const rows: [string, ReactNode][] = [
    ['Command', <code>{shellWords(job.command)}</code>],
    ['Project', <Link to={paths.jobs(job.project)}>{job.project}</Link>],
    ['Queue', job.clusterQueue],
    ['Target', job.target],
    [
      'Requests',
      <>
        {formatAmounts(job.requests) || <span className="muted">none</span>}
        {job.workers > 1 && <span className="muted"> per worker</span>}
      </>,
    ],
    ...(job.workers > 1
      ? ([['Workers', `${job.workers}, all at once (a gang: ranks 0–${job.workers - 1})`]] as [
          string,
          ReactNode,
        ][])
      : []),
    [
      'Priority',
      <>
        {job.priority}
        {job.priorityClass && <span className="muted"> ({job.priorityClass})</span>}
      </>,
    ],
    [
      'Timeout',
      job.timeoutSeconds === null ? (
        <span className="muted">none</span>
      ) : (
        formatDuration(job.timeoutSeconds * 1000)
      ),
    ],
    [
      'Depends on',
      job.dependsOn.length + job.dependsOnAny.length + job.dependsOnFailed.length === 0 ? (
        <span className="muted">nothing</span>
      ) : (
        <span className="list">
          {(
            [
              [job.dependsOn, ''],
              [job.dependsOnAny, ' (any end)'],
              [job.dependsOnFailed, ' (failure)'],
            ] as const
          ).flatMap(([ids, on]) =>
            ids.map((d) => (
              <span key={`${d}${on}`}>
                <Link to={paths.job(d)}>{d}</Link>
                {on && <span className="muted">{on}</span>}
              </span>
            )),
          )}
        </span>
      ),
    ],
    [
      'Environment',
      env.length === 0 ? (
        <span className="muted">none</span>
      ) : (
        <code className="env">{env.map(([k, v]) => `${k}=${v}`).join('\n')}</code>
      ),
    ],
    ['Submitted by', job.createdBy],
    ['Submitted', <Age at={job.createdAt} />],
    ['Ran for', <Duration from={job.startedAt} to={job.finishedAt} />],
  ];
  if (job.borrowed && Object.keys(job.borrowed).length > 0)
    rows.push(['Borrowed', formatAmounts(job.borrowed)]);
  if (job.exitCode !== null) rows.push(['Exit code', String(job.exitCode)]);
  if (job.attempts > 1) rows.push(['Attempts', String(job.attempts)]);
  if (job.position !== null) rows.push(['Position', `${job.position} in queue ${job.clusterQueue}`]);
  return (
    <Section title="Spec" className="spec">
      <dl className="facts">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
    </Section>
  );
}

function Resources({ job }: { job: Job }) {
  return (
    <Section title="Resources">
      {job.resources.length === 0 ? (
        <p className="muted">None requested.</p>
      ) : (
        <TableWrap>
          <table className="table compact">
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Instance</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {job.resources.map((r) => (
                <tr key={r.type}>
                  <td>{r.type}</td>
                  <td>{r.id ?? <span className="muted">–</span>}</td>
                  <td>{r.state}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </Section>
  );
}

function Worker({ job }: { job: Job }) {
  return (
    <Section title="Worker">
      {job.worker ? (
        <p>
          worker {job.worker.id} on target {job.target}: <strong>{job.worker.state}</strong>
          {isFinished(job.state) && (
            <span className="muted"> {job.cleanedUp ? '(cleaned up)' : '(cleaning up)'}</span>
          )}
        </p>
      ) : (
        <p className="muted">{isFinished(job.state) ? 'It never got one.' : 'None yet.'}</p>
      )}
    </Section>
  );
}

function Timeline({ events }: { events: JobEvent[] | null }) {
  return (
    <Section title="Timeline" className="timeline">
      {events === null ? (
        <Loading what="the timeline" />
      ) : (
        <ol className="events">
          {events.map((e) => (
            <li key={e.id}>
              <time dateTime={e.at} title={formatDateTime(e.at)}>
                {formatWhen(e.at)}
              </time>
              <span className={`event-type event-${e.type}`}>{e.type}</span>
              <span className="event-message">{e.message}</span>
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}

function Log({ job }: { job: Job }) {
  const [text, setText] = useState('');
  const textRef = useRef('');
  const [trimmed, setTrimmed] = useState(false);
  const [ended, setEnded] = useState(false);
  /** Set when a connection for this job opens: its first chunk is the whole log so far. */
  const fresh = useRef(true);
  const pre = useRef<HTMLPreElement>(null);
  const atBottom = useRef(true);

  useStreamEvent('open', ({ job: following }) => {
    if (following === job.id) fresh.current = true;
  });
  useStreamEvent('log', (l) => {
    if (l.jobId !== job.id) return;
    let next = fresh.current ? l.text : textRef.current + l.text;
    fresh.current = false;
    if (next.length > LOG_LIMIT) {
      next = next.slice(next.length - LOG_LIMIT);
      setTrimmed(true);
    }
    textRef.current = next;
    setText(next);
  });
  useStreamEvent('log-end', (l) => {
    if (l.jobId === job.id) setEnded(true);
  });

  // Keep following the end while the reader is at the end.
  const onScroll = () => {
    const el = pre.current;
    if (el) atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 8;
  };
  useLayoutEffect(() => {
    const el = pre.current;
    if (el && atBottom.current) el.scrollTop = el.scrollHeight;
  }, [text]);

  const finished = isFinished(job.state);
  let footer: string;
  if (ended) footer = text ? 'End of the log.' : 'The job wrote no output.';
  else if (finished) footer = 'Loading the rest of the log…';
  else if (job.state === 'running') footer = 'Following the output as it is written…';
  else footer = 'The log starts when the job runs.';

  return (
    <Section title="Log" className="log-section">
      {trimmed && <p className="muted">Earlier output is not shown (the log is longer than 2 MB).</p>}
      <pre
        ref={pre}
        className="log"
        role="log"
        aria-label="Log"
        aria-live="polite"
        tabIndex={0}
        onScroll={onScroll}
      >
        {text}
      </pre>
      <p className="log-footer muted">{footer}</p>
    </Section>
  );
}
