/**
 * One job: its state and why, spec, timeline, resources, worker and log. The log and the state
 * follow the tab's stream (opened with `?job=ID` while this page is shown).
 */
import { Facts } from '../components/Facts.js';
import { CancelButton } from '../components/CancelButton.js';
import { EstimatedStart } from '../components/EstimatedStart.js';
import { Reservation, reservationOf } from '../components/Reservation.js';
import { Section } from '../components/Section.js';
import {
  lazy,
  Suspense,
  useCallback,
  useEffect,
  useLayoutEffect,
  useRef,
  useState,
  type ReactNode,
} from 'react';
import { api, failureOf } from '../api.js';
import { Artifacts } from '../components/Artifacts.js';
import { Attempts } from '../components/Attempts.js';
import { JobTimeline } from '../components/JobTimeline.js';
import { StateChip } from '../components/StateChip.js';
import { ErrorAlert, Loading, TableWrap } from '../components/Status.js';
import { Age, Duration } from '../components/Time.js';
import { useApp } from '../context.js';
import { formatAmounts, formatDateTime, formatDuration, formatWhen } from '../format.js';
import { useDebounced, useLoad, useStreamEvent, useTitle } from '../hooks.js';
import { mayCancelAs, roleIn } from '../roles.js';
import { Link, paths } from '../router.js';
import { stream } from '../stream.js';
import { isFinished, type Job, type JobEvent, type Role } from '../types.js';
import { printable } from '../../../src/domain/printable.js';
import { ReasonText } from '../components/ReasonText.js';

/** The terminal (xterm.js) in a chunk of its own: only who opens one loads it. */
const Terminal = lazy(() => import('../components/Terminal.js').then((m) => ({ default: m.Terminal })));

/**
 * Whether `role` may open a terminal inside a job (`submitter`: the viewer submitted it), as the
 * server decides (service/jobs/job-exec.ts): admins, the project's owners, and its submitter
 * while a member — never a viewer.
 */
const mayExecAs = (role: Role | 'admin' | null, submitter: boolean): boolean =>
  role === 'admin' || role === 'owner' || (role === 'member' && submitter);

/** The most log text kept on screen; older output is dropped from the top. */
const LOG_LIMIT = 2_000_000;

export function JobPage({ id }: { id: number }) {
  useTitle(`Job ${id}`);
  const { user, setProject } = useApp();
  const [job, setJob] = useState<Job | null>(null);
  const [events, setEvents] = useState<JobEvent[] | null>(null);
  const [error, setError] = useState<{ status: number; message: string } | null>(null);
  const [role, setRole] = useState<Role | 'admin' | null>(user.admin ? 'admin' : null);
  /** The job whose terminal is open on this page, if any. */
  const [terminalOf, setTerminalOf] = useState<number | null>(null);

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        const [j, ev] = await Promise.all([api.job(id, signal), api.jobEvents(id, signal)]);
        setJob(j);
        setEvents(ev);
        setError(null);
      } catch (e) {
        if (signal?.aborted) return;
        setError(failureOf(e));
      }
    },
    [id],
  );

  useLoad(load);

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
  // Its place in the queue and its estimated start move with the other jobs, which send no
  // notice of this one: while it waits, a change in the queues' figures reads it again.
  const refresh = useDebounced(() => void load(), 1000, 5000);
  useStreamEvent('figures', () => {
    if (job?.state === 'queued') refresh();
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

  const mayCancel = mayCancelAs(role);
  const terminalOpen = terminalOf === job.id;
  const mayTerminal = job.state === 'running' && mayExecAs(role, job.createdBy === user.name);
  return (
    <>
      <div className="page-head">
        <div>
          <h1 tabIndex={-1}>Job {job.id}</h1>
          <p className="job-name">{job.name}</p>
        </div>
        <div className="page-actions">
          {mayTerminal && !terminalOpen && (
            <button type="button" onClick={() => setTerminalOf(job.id)}>
              {job.interactive ? 'Attach' : 'Terminal'}
            </button>
          )}
          {!isFinished(job.state) && mayCancel && (
            <CancelButton
              label="Cancel job"
              requested={job.cancelRequested}
              cancel={() => api.cancelJob(job.id)}
              onCancelled={setJob}
            />
          )}
        </div>
      </div>
      <p className="status-line" role="status">
        <StateChip state={job.state} />
        <span className="reason">
          <ReasonText reason={job.reason} />
        </span>
        {job.cancelRequested && !isFinished(job.state) && <span className="badge">cancel requested</span>}
      </p>
      {error && <ErrorAlert>{error.message}</ErrorAlert>}
      {terminalOpen && (
        <Suspense fallback={<Loading what="the terminal" />}>
          <Terminal
            job={job.id}
            mode={job.interactive ? 'attach' : 'exec'}
            onClose={() => setTerminalOf(null)}
          />
        </Suspense>
      )}
      <div className="job-grid">
        <Spec job={job} />
        <div className="job-side">
          <Resources job={job} />
          <Worker job={job} />
          <Artifacts job={job} />
        </div>
        <Timeline events={events} />
      </div>
      <JobTimeline state={job.state} events={events} />
      <Attempts job={job} />
      <Log job={job} />
    </>
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
    [
      'Command',
      job.command.length === 0 && job.image !== null ? (
        <span className="muted">the image&rsquo;s own</span>
      ) : (
        <code>{shellWords(job.command)}</code>
      ),
    ],
    ...(job.image !== null
      ? ([
          [
            'Image',
            <>
              <code>{job.image}</code>{' '}
              {job.imageDigest === null ? (
                <span className="muted">its digest: once admitted</span>
              ) : (
                <code className="muted">{job.imageDigest}</code>
              )}
            </>,
          ],
        ] as [string, ReactNode][])
      : []),
    ['Project', <Link to={paths.jobs(job.project)}>{job.project}</Link>],
    ...(job.arrayId !== null
      ? ([
          [
            'Array',
            <>
              task {job.arrayIndex} of <Link to={paths.array(job.arrayId)}>array {job.arrayId}</Link>
            </>,
          ],
        ] as [string, ReactNode][])
      : []),
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
  if (job.retries > 0 || job.infraRetries > 0)
    rows.push([
      'Retries',
      <>
        {job.retried} of {job.retries} used for its own failures, {job.infraRetried} of {job.infraRetries} for
        the infrastructure's
        <span className="muted"> (backoff {formatDuration(job.retryBackoffSeconds * 1000)})</span>
      </>,
    ]);
  if (job.attempts > 0) rows.push(['Attempt', String(job.attempts + 1)]);
  if (job.retryAt !== null)
    rows.push(['Retry at', <time dateTime={job.retryAt}>{formatDateTime(job.retryAt)}</time>]);
  if (job.position !== null) rows.push(['Position', `${job.position} in queue ${job.clusterQueue}`]);
  if (job.state === 'queued' && job.estimate !== null)
    rows.push(['Estimated start', <EstimatedStart at={job.estimatedStartAt} how={job.estimate} />]);
  const reservation = job.state === 'queued' ? reservationOf(job.blockers) : undefined;
  if (reservation) rows.push(['Reservation', <Reservation job={job.id} of={reservation} />]);
  return <Facts title="Spec" className="spec" rows={rows} />;
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
              <span className="event-message">{printable(e.message)}</span>
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
