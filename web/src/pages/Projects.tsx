/** The projects the caller can see, with their jobs by state; a name opens that project's jobs. */
import { useEffect } from 'react';
import { Loading, Notice, TableWrap } from '../components/Status.js';
import { useApp } from '../context.js';
import { formatCount } from '../format.js';
import { useDebounced, useStreamEvent, useTitle } from '../hooks.js';
import { Link, paths } from '../router.js';
import type { JobState, ProjectView } from '../types.js';

const COUNTED: { state: JobState; label: string }[] = [
  { state: 'queued', label: 'Queued' },
  { state: 'running', label: 'Running' },
  { state: 'succeeded', label: 'Succeeded' },
  { state: 'failed', label: 'Failed' },
  { state: 'cancelled', label: 'Cancelled' },
];

export function Projects() {
  useTitle('Projects');
  const { projects, project: current, setProject, reloadProjects } = useApp();

  // Fresh counts on arrival, then on every change of a job (coalesced).
  useEffect(() => {
    void reloadProjects();
  }, [reloadProjects]);
  const refresh = useDebounced(() => void reloadProjects(), 500, 3000);
  useStreamEvent('job', refresh);

  return (
    <>
      <h1 tabIndex={-1}>Projects</h1>
      {projects === null ? (
        <Loading what="projects" />
      ) : projects.length === 0 ? (
        <Notice>You are not a member of any project yet: ask a project owner or an admin to add you.</Notice>
      ) : (
        <TableWrap>
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Queue</th>
                <th scope="col">Tags</th>
                <th scope="col">Active</th>
                {COUNTED.map((c) => (
                  <th scope="col" className="num" key={c.state}>
                    {c.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {projects.map((p) => (
                <ProjectRow
                  key={p.name}
                  p={p}
                  current={p.name === current}
                  onOpen={() => setProject(p.name)}
                />
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </>
  );
}

function ProjectRow({ p, current, onOpen }: { p: ProjectView; current: boolean; onOpen: () => void }) {
  return (
    <tr className={current ? 'current' : undefined}>
      <td>
        <Link to={paths.jobs(p.name)} onClick={onOpen} aria-current={current ? 'true' : undefined}>
          {p.name}
        </Link>
        {p.description && <div className="sub">{p.description}</div>}
      </td>
      <td>{p.clusterQueue}</td>
      <td>
        {p.tags.length === 0 ? (
          <span className="muted">–</span>
        ) : (
          <ul className="tags">
            {p.tags.map((t) => (
              <li key={t} className="tag">
                {t}
              </li>
            ))}
          </ul>
        )}
      </td>
      <td>{p.active ? 'yes' : <span className="inactive">no</span>}</td>
      {COUNTED.map((c) => (
        <td className="num" key={c.state}>
          {formatCount(p.jobCounts[c.state])}
        </td>
      ))}
    </tr>
  );
}
