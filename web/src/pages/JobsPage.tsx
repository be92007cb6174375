/**
 * A project's jobs, one page of 50 at a time (cursor paging: fast however many jobs there are),
 * filtered by state and sorted by id or priority. Unfiltered, each job array is one row (its
 * first task, with how all its tasks stand) linking to the array's page; filtered by state, its
 * tasks are listed one by one as any job. Rows follow the stream: a changed job on screen is
 * fetched again, and a new one refreshes the page.
 */
import { Pager } from '../components/Pager.js';
import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { api, ApiError } from '../api.js';
import { SortHeader, type Direction } from '../components/SortHeader.js';
import { ArraySpecText, countsText } from '../components/ArrayCounts.js';
import { StateChip } from '../components/StateChip.js';
import { ErrorAlert, Loading, Notice, TableWrap } from '../components/Status.js';
import { Age, Duration } from '../components/Time.js';
import { useApp } from '../context.js';
import { formatCount } from '../format.js';
import { useDebounced, useStreamEvent, useTitle } from '../hooks.js';
import { Link, navigate, paths, useLocation } from '../router.js';
import { isFinished, JOB_STATES, type Job, type JobPage, type JobSort, type JobState } from '../types.js';
import { printable } from '../../../src/domain/printable.js';
import { ReasonText } from '../components/ReasonText.js';

export const PAGE_SIZE = 50;
const SORTS: readonly JobSort[] = ['-id', 'id', '-priority', 'priority'];

/** `?state=running&sort=-priority` → the filter and order (unknown values are ignored). */
function readQuery(search: string): { state: JobState | null; sort: JobSort } {
  const q = new URLSearchParams(search);
  const state = q.get('state');
  const sort = q.get('sort');
  return {
    state: JOB_STATES.find((s) => s === state) ?? null,
    sort: SORTS.find((s) => s === sort) ?? '-id',
  };
}

function jobsUrl(project: string, state: JobState | null, sort: JobSort): string {
  const q = new URLSearchParams();
  if (state) q.set('state', state);
  if (sort !== '-id') q.set('sort', sort);
  const qs = q.toString();
  return paths.jobs(project) + (qs ? '?' + qs : '');
}

export function JobsPage({ project }: { project: string }) {
  useTitle(`Jobs · ${project}`);
  const location = useLocation();
  const { state, sort } = readQuery(location.includes('?') ? location.slice(location.indexOf('?')) : '');
  const stateId = useId();

  const setQuery = (next: { state?: JobState | null; sort?: JobSort }) =>
    navigate(jobsUrl(project, next.state === undefined ? state : next.state, next.sort ?? sort), {
      replace: true,
    });

  return (
    <>
      <div className="page-head">
        <div>
          <h1 tabIndex={-1}>Jobs</h1>
          <p className="page-sub">
            in project <strong>{project}</strong>
          </p>
        </div>
        <div className="filters">
          <label htmlFor={stateId}>State</label>
          <select
            id={stateId}
            value={state ?? ''}
            onChange={(e) => setQuery({ state: (e.target.value || null) as JobState | null })}
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
      {/* A new filter or order starts again at the first page. */}
      <JobsTable
        key={`${state ?? ''}|${sort}`}
        project={project}
        state={state}
        sort={sort}
        onSort={(s) => setQuery({ sort: s })}
      />
    </>
  );
}

interface TableProps {
  project: string;
  state: JobState | null;
  sort: JobSort;
  onSort: (sort: JobSort) => void;
}

interface Loaded {
  page: JobPage;
  /** Index of this page (0 = first). */
  index: number;
}

function JobsTable({ project, state, sort, onSort }: TableProps) {
  // Cursors of the pages visited, so "Previous page" can go back: cursors[i] opens page i.
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(true);
  const abortRef = useRef<AbortController | null>(null);
  const rowsRef = useRef<Job[]>([]);
  /** The newest job id seen, to tell a new job from a change of an old one. */
  const newestRef = useRef(0);
  const index = cursors.length - 1;
  const cursor = cursors[index] ?? null;
  // Without a state filter each array is one row; with one, its tasks are jobs like any other.
  const collapse = state === null;

  const load = useCallback(
    async (cursorToLoad: string | null, pageIndex: number) => {
      abortRef.current?.abort();
      const abort = new AbortController();
      abortRef.current = abort;
      setBusy(true);
      try {
        const page = await api.jobs(
          project,
          { states: state ? [state] : [], sort, cursor: cursorToLoad, limit: PAGE_SIZE, collapse },
          abort.signal,
        );
        if (abort.signal.aborted) return;
        rowsRef.current = page.jobs;
        for (const j of page.jobs) newestRef.current = Math.max(newestRef.current, j.id);
        setLoaded({ page, index: pageIndex });
        setError(null);
      } catch (e) {
        if (abort.signal.aborted) return;
        setError(e instanceof ApiError ? e.message : String(e));
      } finally {
        if (abortRef.current === abort) setBusy(false);
      }
    },
    [project, state, sort, collapse],
  );

  useEffect(() => {
    void load(cursor, index);
  }, [load, cursor, index]);
  useEffect(() => () => abortRef.current?.abort(), []);

  // Live: jobs on screen are fetched again (a few at a time), anything else reloads the page.
  const changed = useRef(new Set<number>());
  const reloadPage = useDebounced(() => void load(cursor, index), 200, 1000);
  const refreshRows = useDebounced(
    () => {
      const ids = [...changed.current];
      changed.current.clear();
      if (ids.length > 5) {
        void load(cursor, index);
        return;
      }
      for (const id of ids) {
        api.job(id).then(
          (job) => {
            rowsRef.current = rowsRef.current.map((j) => (j.id === id ? job : j));
            setLoaded(
              (l) =>
                l && { ...l, page: { ...l.page, jobs: l.page.jobs.map((j) => (j.id === id ? job : j)) } },
            );
          },
          () => undefined, // gone or unreachable: the next page load says so
        );
      }
    },
    200,
    1000,
  );

  useStreamEvent('job', (n) => {
    if (n.project !== project) return;
    const row = rowsRef.current.find((j) => j.id === n.id);
    const onScreen = row !== undefined;
    const isNew = n.id > newestRef.current;
    if (isNew) newestRef.current = n.id;
    // A notice names the task, not its array: while an array on screen has tasks in play, any
    // change in the project may be one of them, so the page (its counts) is read again.
    const arraysInPlay = rowsRef.current.some((j) => j.array && !isFinished(j.array.state));
    if (row?.array || (!onScreen && arraysInPlay)) {
      reloadPage();
      return;
    }
    if (onScreen) {
      if (state && n.state !== state) {
        reloadPage(); // it leaves this filter
        return;
      }
      // Show the new state at once; the full row follows.
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
      changed.current.add(n.id);
      refreshRows();
    } else if (isNew || (state !== null && n.state === state)) {
      reloadPage(); // it may join this page, and it changes the count
    }
  });
  useStreamEvent('open', ({ resync }) => {
    if (resync) reloadPage();
  });

  const direction = (field: 'id' | 'priority'): Direction =>
    sort === field ? 'ascending' : sort === `-${field}` ? 'descending' : null;
  const toggle = (field: 'id' | 'priority') =>
    onSort(sort === `-${field}` ? field : (`-${field}` as JobSort));

  const page = loaded?.page ?? null;
  const from = loaded ? loaded.index * PAGE_SIZE + 1 : 0;
  const to = loaded ? loaded.index * PAGE_SIZE + loaded.page.jobs.length : 0;
  let status = '';
  if (page) {
    if (page.jobs.length === 0) status = page.total === null || page.total === 0 ? 'No jobs' : 'No more jobs';
    else
      status =
        `${formatCount(from)}–${formatCount(to)}` +
        (page.total === null ? '' : ` of ${formatCount(page.total)}`) +
        // The total counts every task of every array (X-Total-Count), the rows one per array.
        (page.jobs.some((j) => j.array) ? ' jobs, each array as one row' : '');
  }
  const empty = page && page.jobs.length === 0;

  return (
    <>
      {error && <ErrorAlert>{error}</ErrorAlert>}
      {!page && !error && <Loading what="jobs" />}
      {page && (
        <>
          <TableWrap>
            <table className={`table jobs${busy ? ' busy' : ''}`} aria-busy={busy}>
              <thead>
                <tr>
                  <SortHeader direction={direction('id')} onSort={() => toggle('id')} className="num">
                    ID
                  </SortHeader>
                  <th scope="col">Name</th>
                  <th scope="col">State</th>
                  <th scope="col">Reason</th>
                  <th scope="col" className="num">
                    Position
                  </th>
                  <SortHeader
                    direction={direction('priority')}
                    onSort={() => toggle('priority')}
                    className="num"
                  >
                    Priority
                  </SortHeader>
                  <th scope="col" className="num">
                    Age
                  </th>
                  <th scope="col" className="num">
                    Duration
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.jobs.map((j) =>
                  j.array ? <ArrayRow key={j.id} job={j} /> : <JobRow key={j.id} job={j} />,
                )}
                {empty && (
                  <tr>
                    <td colSpan={8} className="empty">
                      {state ? `No ${state} jobs in ${project}.` : `No jobs in ${project} yet.`}{' '}
                      {!state && <Link to={paths.submit()}>Submit one</Link>}
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
    </>
  );
}

function JobRow({ job: j }: { job: Job }) {
  return (
    <tr>
      <td className="num">
        <Link to={paths.job(j.id)}>{j.id}</Link>
      </td>
      <td className="name">{printable(j.name)}</td>
      <td>
        <StateChip state={j.state} />
      </td>
      <td className="reason">
        <ReasonText reason={j.reason} />
      </td>
      <td className="num">{j.position ?? <span className="muted">–</span>}</td>
      <td className="num">
        {j.priorityClass ? <span title={`priority class ${j.priorityClass}`}>{j.priority}</span> : j.priority}
      </td>
      <td className="num">
        <Age at={j.createdAt} />
      </td>
      <td className="num">
        <Duration from={j.startedAt} to={j.finishedAt} />
      </td>
    </tr>
  );
}

/**
 * An array as one row: its id (to its page), name and spec, its state, and its tasks' counts in
 * the Reason column. Position and duration are a task's, not the array's: left empty.
 */
function ArrayRow({ job: j }: { job: Job }) {
  const a = j.array!;
  return (
    <tr className="array-row">
      <td className="num">
        <Link to={paths.array(a.id)} aria-label={`Array ${a.id}`}>
          {a.id}
        </Link>
      </td>
      <td className="name">
        {j.name} <ArraySpecText spec={a.spec} />
      </td>
      <td>
        <StateChip state={a.state} />
      </td>
      <td className="reason">
        <span className="muted">{formatCount(a.size)} tasks:</span> {countsText(a.counts)}
      </td>
      <td className="num">
        <span className="muted">–</span>
      </td>
      <td className="num">{j.priority}</td>
      <td className="num">
        <Age at={j.createdAt} />
      </td>
      <td className="num">
        <span className="muted">–</span>
      </td>
    </tr>
  );
}

/** `/jobs`: the current project's jobs, once there is one. */
export function NoProjectJobs() {
  useTitle('Jobs');
  const { project, projects } = useApp();
  useEffect(() => {
    if (project) navigate(paths.jobs(project), { replace: true });
  }, [project]);
  return (
    <>
      <h1 tabIndex={-1}>Jobs</h1>
      {projects === null || project ? (
        <Loading what="projects" />
      ) : (
        <Notice>You are not a member of any project yet: ask a project owner or an admin to add you.</Notice>
      )}
    </>
  );
}
