/**
 * One job array: its spec, size and throttle, how its tasks stand (live), a button to cancel every
 * unfinished task, and its tasks, 100 to a page, optionally filtered by state. Stream notices name
 * a task, not its array: a change of a job of the project newer than the array may be one of its
 * tasks, so while the array has tasks in play such a change reads the array again (debounced).
 */
import { Facts } from '../components/Facts.js';
import { CancelButton } from '../components/CancelButton.js';
import { Section } from '../components/Section.js';
import { Pager } from '../components/Pager.js';
import { useCallback, useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { api, ApiError, failureOf } from '../api.js';
import { ArrayBar, ArraySpecText, countsText } from '../components/ArrayCounts.js';
import { StateChip } from '../components/StateChip.js';
import { ErrorAlert, Loading, TableWrap } from '../components/Status.js';
import { Age, Duration } from '../components/Time.js';
import { useApp } from '../context.js';
import { formatCount } from '../format.js';
import { useDebounced, useLoad, useStreamEvent, useTitle } from '../hooks.js';
import { mayCancelAs, roleIn } from '../roles.js';
import { Link, navigate, paths, useLocation } from '../router.js';
import {
  isFinished,
  JOB_STATES,
  type ArrayView,
  type Job,
  type JobPage,
  type JobState,
  type Role,
} from '../types.js';
import { ReasonText } from '../components/ReasonText.js';

export const TASKS_PAGE_SIZE = 100;

/** `?state=running` → that state (unknown values are ignored). */
function stateOf(location: string): JobState | null {
  const q = new URLSearchParams(location.includes('?') ? location.slice(location.indexOf('?')) : '');
  const state = q.get('state');
  return JOB_STATES.find((s) => s === state) ?? null;
}

const arrayUrl = (id: number, state: JobState | null) => paths.array(id) + (state ? `?state=${state}` : '');

export function ArrayPage({ id }: { id: number }) {
  useTitle(`Array ${id}`);
  const { user, setProject } = useApp();
  const location = useLocation();
  const state = stateOf(location);
  const [array, setArray] = useState<ArrayView | null>(null);
  const [cancelAsked, setCancelAsked] = useState(false);
  const [error, setError] = useState<{ status: number; message: string } | null>(null);
  const [role, setRole] = useState<Role | 'admin' | null>(user.admin ? 'admin' : null);

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        setArray(await api.array(id, signal));
        setError(null);
      } catch (e) {
        if (signal?.aborted) return;
        setError(failureOf(e));
      }
    },
    [id],
  );
  useLoad(load);

  const project = array?.job.project;
  // An array's page makes its project the current one (the switcher, the Jobs link).
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

  const reload = useDebounced(() => void load(), 200, 1000);
  useStreamEvent('job', (n) => {
    // Its tasks are the array's first job and later ones; a finished array changes no more.
    if (!array || n.project !== array.job.project || n.id < id || isFinished(array.state)) return;
    reload();
  });
  useStreamEvent('open', ({ resync }) => {
    if (resync) reload();
  });

  if (!array) {
    return (
      <>
        <h1 tabIndex={-1}>Array {id}</h1>
        {error ? (
          <ErrorAlert>
            {error.status === 404 ? `Array ${id} does not exist, or is not yours to see.` : error.message}
          </ErrorAlert>
        ) : (
          <Loading what={`array ${id}`} />
        )}
      </>
    );
  }

  const finished = isFinished(array.state);
  return (
    <>
      <div className="page-head">
        <div>
          <h1 tabIndex={-1}>Array {array.id}</h1>
          <p className="job-name">
            {array.job.name} <ArraySpecText spec={array.spec} />
          </p>
        </div>
        {!finished && mayCancelAs(role) && (
          <CancelButton
            label="Cancel array"
            requested={cancelAsked}
            cancel={() => api.cancelArray(array.id)}
            onCancelled={(a) => {
              setCancelAsked(true);
              setArray(a);
            }}
          />
        )}
      </div>
      <div className="status-line" role="status">
        <StateChip state={array.state} />
        <span className="reason">{countsText(array.counts)}</span>
      </div>
      {error && <ErrorAlert>{error.message}</ErrorAlert>}
      <div className="job-grid array-grid">
        <ArraySpec array={array} />
        <ByState array={array} />
      </div>
      <Tasks
        key={state ?? ''}
        array={array}
        state={state}
        onState={(s) => navigate(arrayUrl(array.id, s), { replace: true })}
      />
    </>
  );
}

function ArraySpec({ array }: { array: ArrayView }) {
  const job = array.job;
  const rows: [string, ReactNode][] = [
    ['Spec', <ArraySpecText spec={array.spec} />],
    ['Size', `${formatCount(array.size)} ${array.size === 1 ? 'task' : 'tasks'}`],
    [
      'Throttle',
      array.throttle === null ? (
        <span className="muted">none: all tasks may run at once</span>
      ) : (
        `at most ${formatCount(array.throttle)} ${array.throttle === 1 ? 'task' : 'tasks'} at once`
      ),
    ],
    ['Project', <Link to={paths.jobs(job.project)}>{job.project}</Link>],
    [
      'First task',
      <>
        <Link to={paths.job(job.id)}>job {job.id}</Link>
        <span className="muted"> (index {job.arrayIndex ?? 0})</span>
      </>,
    ],
    ['Queue', job.clusterQueue],
    ['Submitted by', job.createdBy],
    ['Submitted', <Age at={job.createdAt} />],
  ];
  return <Facts title="Spec" className="spec" rows={rows} />;
}

/** Every state with its count, each a link to the tasks in that state. */
function ByState({ array }: { array: ArrayView }) {
  return (
    <Section title="Tasks by state">
      <ArrayBar summary={array} />
      <ul className="array-states">
        {JOB_STATES.map((s) => (
          <li key={s}>
            <StateChip state={s} />
            <span className="array-state-count">
              {array.counts[s] > 0 ? (
                <Link to={arrayUrl(array.id, s)} aria-label={`${array.counts[s]} ${s}`}>
                  {formatCount(array.counts[s])}
                </Link>
              ) : (
                <span className="muted">0</span>
              )}
            </span>
          </li>
        ))}
      </ul>
    </Section>
  );
}

interface TasksProps {
  array: ArrayView;
  state: JobState | null;
  onState: (state: JobState | null) => void;
}

interface Loaded {
  page: JobPage;
  index: number;
}

/** The array's tasks by index, a page at a time (cursor paging, as the jobs page). */
function Tasks({ array, state, onState }: TasksProps) {
  const filterId = useId();
  const headingId = useId();
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(true);
  const abortRef = useRef<AbortController | null>(null);
  const rowsRef = useRef<Job[]>([]);
  const index = cursors.length - 1;
  const cursor = cursors[index] ?? null;
  const { id, job } = array;
  const project = job.project;

  const load = useCallback(
    async (cursorToLoad: string | null, pageIndex: number) => {
      abortRef.current?.abort();
      const abort = new AbortController();
      abortRef.current = abort;
      setBusy(true);
      try {
        const page = await api.jobs(
          project,
          {
            states: state ? [state] : [],
            sort: 'id',
            cursor: cursorToLoad,
            limit: TASKS_PAGE_SIZE,
            array: id,
          },
          abort.signal,
        );
        if (abort.signal.aborted) return;
        rowsRef.current = page.jobs;
        setLoaded({ page, index: pageIndex });
        setError(null);
      } catch (e) {
        if (abort.signal.aborted) return;
        setError(e instanceof ApiError ? e.message : String(e));
      } finally {
        if (abortRef.current === abort) setBusy(false);
      }
    },
    [project, id, state],
  );
  useEffect(() => {
    void load(cursor, index);
  }, [load, cursor, index]);
  useEffect(() => () => abortRef.current?.abort(), []);

  const reloadPage = useDebounced(() => void load(cursor, index), 200, 1000);
  const finished = isFinished(array.state);
  useStreamEvent('job', (n) => {
    if (n.project !== project || n.id < id) return;
    const onScreen = rowsRef.current.some((j) => j.id === n.id);
    if (onScreen) {
      // The new state at once; the full row (and whether it still passes the filter) follows.
      setLoaded(
        (l) =>
          l && {
            ...l,
            page: {
              ...l.page,
              jobs: l.page.jobs.map((j) => (j.id === n.id ? { ...j, state: n.state, reason: n.reason } : j)),
            },
          },
      );
      reloadPage();
    } else if (state !== null && n.state === state && !finished) {
      reloadPage(); // one of its tasks may have joined this filter
    }
  });
  useStreamEvent('open', ({ resync }) => {
    if (resync) reloadPage();
  });

  const page = loaded?.page ?? null;
  // X-Total-Count counts the whole project's jobs; the array's own counts say how many tasks.
  const total = state ? array.counts[state] : array.size;
  const from = loaded ? loaded.index * TASKS_PAGE_SIZE + 1 : 0;
  const to = loaded ? loaded.index * TASKS_PAGE_SIZE + loaded.page.jobs.length : 0;
  let status = '';
  if (page) {
    status =
      page.jobs.length === 0
        ? state
          ? `No ${state} tasks`
          : 'No tasks'
        : `${formatCount(from)}–${formatCount(to)} of ${formatCount(Math.max(total, to))} ${state ? `${state} ` : ''}tasks`;
  }

  return (
    <section aria-labelledby={headingId} className="array-tasks">
      <div className="section-head">
        <h2 id={headingId}>Tasks</h2>
        <div className="filters">
          <label htmlFor={filterId}>State</label>
          <select
            id={filterId}
            value={state ?? ''}
            onChange={(e) => onState((e.target.value || null) as JobState | null)}
          >
            <option value="">All</option>
            {JOB_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
      </div>
      {error && <ErrorAlert>{error}</ErrorAlert>}
      {!page && !error && <Loading what="tasks" />}
      {page && (
        <>
          <TableWrap>
            <table className={`table${busy ? ' busy' : ''}`} aria-labelledby={headingId} aria-busy={busy}>
              <thead>
                <tr>
                  <th scope="col" className="num">
                    Index
                  </th>
                  <th scope="col" className="num">
                    Job
                  </th>
                  <th scope="col">State</th>
                  <th scope="col">Reason</th>
                  <th scope="col" className="num">
                    Duration
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.jobs.map((t) => (
                  <tr key={t.id}>
                    <td className="num">{t.arrayIndex}</td>
                    <td className="num">
                      <Link to={paths.job(t.id)}>{t.id}</Link>
                    </td>
                    <td>
                      <StateChip state={t.state} />
                    </td>
                    <td className="reason">
                      <ReasonText reason={t.reason} />
                    </td>
                    <td className="num">
                      <Duration from={t.startedAt} to={t.finishedAt} />
                    </td>
                  </tr>
                ))}
                {page.jobs.length === 0 && (
                  <tr>
                    <td colSpan={5} className="empty">
                      {state ? `No ${state} tasks in array ${id}.` : `Array ${id} has no tasks.`}
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </TableWrap>
          <Pager
            status={status}
            index={index}
            nextCursor={page.nextCursor}
            current={loaded?.index === index}
            setCursors={setCursors}
          />
        </>
      )}
    </section>
  );
}
