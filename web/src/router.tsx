/** A tiny router on the History API: the routes of the dashboard and links that use them. */
import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent, type ReactNode } from 'react';

export type Route =
  | { page: 'overview' }
  | { page: 'queue'; name: string }
  | { page: 'usage' }
  | { page: 'projects' }
  | { page: 'jobs'; project: string }
  | { page: 'job'; id: number }
  | { page: 'array'; id: number }
  | { page: 'submit' }
  | { page: 'no-project-jobs' }
  | { page: 'not-found'; path: string };

/** A path segment decoded; undefined when its percent-encoding is malformed. */
function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

export function parseRoute(pathname: string): Route {
  const path = pathname.replace(/\/+$/, '') || '/';
  if (path === '/') return { page: 'overview' };
  if (path === '/projects') return { page: 'projects' };
  if (path === '/usage') return { page: 'usage' };
  if (path === '/submit') return { page: 'submit' };
  if (path === '/jobs') return { page: 'no-project-jobs' };
  let m = /^\/projects\/([^/]+)\/jobs$/.exec(path);
  if (m?.[1]) {
    const project = decodeSegment(m[1]);
    return project === undefined ? { page: 'not-found', path } : { page: 'jobs', project };
  }
  m = /^\/queues\/([^/]+)$/.exec(path);
  if (m?.[1]) {
    const name = decodeSegment(m[1]);
    return name === undefined ? { page: 'not-found', path } : { page: 'queue', name };
  }
  m = /^\/jobs\/([0-9]{1,15})$/.exec(path);
  if (m?.[1] && Number(m[1]) > 0) return { page: 'job', id: Number(m[1]) };
  m = /^\/arrays\/([0-9]{1,15})$/.exec(path);
  if (m?.[1] && Number(m[1]) > 0) return { page: 'array', id: Number(m[1]) };
  return { page: 'not-found', path };
}

export const paths = {
  overview: () => '/',
  projects: () => '/projects',
  queue: (name: string) => `/queues/${encodeURIComponent(name)}`,
  usage: () => '/usage',
  jobs: (project: string) => `/projects/${encodeURIComponent(project)}/jobs`,
  job: (id: number) => `/jobs/${id}`,
  array: (id: number) => `/arrays/${id}`,
  /** The jobs page before a project is known: it goes on to the current project's. */
  jobsOfNoProject: () => '/jobs',
  submit: () => '/submit',
};

const listeners = new Set<() => void>();
const notify = () => {
  for (const l of listeners) l();
};
window.addEventListener('popstate', notify);

function subscribe(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

const snapshot = () => location.pathname + location.search;

/** The current path with its query string. */
export function useLocation(): string {
  return useSyncExternalStore(subscribe, snapshot);
}

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (to === snapshot()) return;
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  notify();
}

interface LinkProps extends Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'> {
  to: string;
  children: ReactNode;
}

/** An ordinary link (open in a new tab still works) that navigates in place on a plain click. */
export function Link({ to, onClick, children, ...rest }: LinkProps) {
  const click = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    if (rest.target && rest.target !== '_self') return;
    e.preventDefault();
    navigate(to);
  };
  return (
    <a href={to} onClick={click} {...rest}>
      {children}
    </a>
  );
}
