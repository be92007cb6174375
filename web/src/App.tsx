/** The app: sign-in, then the dashboard's frame (header, navigation, project switcher) and its pages. */
import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api, clearSession, loadSession, setUnauthorizedHandler, type Session } from './api.js';
import { AppContext, useApp, type AppState } from './context.js';
import { useStreamEvent, useStreamStatus } from './hooks.js';
import { ArrayPage } from './pages/ArrayPage.js';
import { JobPage } from './pages/JobPage.js';
import { JobsPage, NoProjectJobs } from './pages/JobsPage.js';
import { NotFound } from './pages/NotFound.js';
import { Overview } from './pages/Overview.js';
import { Projects } from './pages/Projects.js';
import { SignIn } from './pages/SignIn.js';
import { Submit } from './pages/Submit.js';
import { Link, navigate, parseRoute, paths, useLocation, type Route } from './router.js';
import { stream } from './stream.js';
import type { Health, ProjectView } from './types.js';
import { Logo } from './components/Logo.js';
import { Loading } from './components/Status.js';

// The pages with charts load the chart library (uPlot) on first use, in a chunk of their own.
const QueuePage = lazy(() => import('./pages/charts.js').then((m) => ({ default: m.QueuePage })));
const UsagePage = lazy(() => import('./pages/charts.js').then((m) => ({ default: m.UsagePage })));

const PROJECT_KEY = 'berth.project';

export function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const [notice, setNotice] = useState<string | null>(null);

  const signOut = useCallback((message: string | null) => {
    clearSession();
    stream.stop();
    setNotice(message);
    setSession(null);
  }, []);

  useEffect(() => {
    setUnauthorizedHandler((message) => signOut(`Signed out: ${message}.`));
  }, [signOut]);

  if (!session) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s) => {
          setNotice(null);
          setSession(s);
        }}
      />
    );
  }
  return <Dashboard session={session} onSignOut={() => signOut(null)} />;
}

function Dashboard({ session, onSignOut }: { session: Session; onSignOut: () => void }) {
  const location = useLocation();
  const route = parseRoute(location.split('?')[0] ?? '/');
  const [projects, setProjects] = useState<ProjectView[] | null>(null);
  const [chosen, setChosen] = useState<string | null>(() => localStorage.getItem(PROJECT_KEY));

  useEffect(() => {
    stream.start(session.token);
    return () => stream.stop();
  }, [session.token]);

  const reloadProjects = useCallback(async () => {
    try {
      setProjects(await api.projects());
    } catch {
      // a signed-out session or a network error: the pages say so where it matters
    }
  }, []);
  useEffect(() => {
    void reloadProjects();
  }, [reloadProjects]);
  useStreamEvent('open', ({ resync }) => {
    if (resync) void reloadProjects();
  });

  // The current project: the one in the address, else the last one chosen, else the first.
  const routeProject = route.page === 'jobs' ? route.project : null;
  const project =
    routeProject ??
    (projects === null
      ? chosen
      : projects.some((p) => p.name === chosen)
        ? chosen
        : (projects[0]?.name ?? null));
  const setProject = useCallback((name: string) => {
    localStorage.setItem(PROJECT_KEY, name);
    setChosen(name);
  }, []);
  useEffect(() => {
    if (routeProject) setProject(routeProject);
  }, [routeProject, setProject]);

  const state: AppState = useMemo(
    () => ({ user: session.user, projects, project, setProject, reloadProjects }),
    [session.user, projects, project, setProject, reloadProjects],
  );

  useFocusOnNavigation(location);

  return (
    <AppContext.Provider value={state}>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <Header route={route} onSignOut={onSignOut} />
      <main id="main" tabIndex={-1}>
        <Page route={route} />
      </main>
    </AppContext.Provider>
  );
}

/** After an in-app navigation, the new page's heading gets the focus (screen readers read it). */
function useFocusOnNavigation(location: string) {
  const first = useRef(true);
  const path = location.split('?')[0];
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    window.scrollTo(0, 0);
    const h1 = document.querySelector<HTMLElement>('main h1');
    h1?.focus({ preventScroll: true });
  }, [path]);
}

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case 'overview':
      return <Overview />;
    case 'projects':
      return <Projects />;
    case 'queue':
      return (
        <Suspense fallback={<Loading what="the charts" />}>
          <QueuePage key={route.name} name={route.name} />
        </Suspense>
      );
    case 'usage':
      return (
        <Suspense fallback={<Loading what="the charts" />}>
          <UsagePage />
        </Suspense>
      );
    case 'jobs':
      return <JobsPage key={route.project} project={route.project} />;
    case 'job':
      return <JobPage key={route.id} id={route.id} />;
    case 'array':
      return <ArrayPage key={route.id} id={route.id} />;
    case 'submit':
      return <Submit />;
    case 'no-project-jobs':
      return <NoProjectJobs />;
    case 'not-found':
      return <NotFound path={route.path} />;
  }
}

function Header({ route, onSignOut }: { route: Route; onSignOut: () => void }) {
  return (
    <header className="top">
      <div className="top-inner">
        <Link to={paths.overview()} className="brand" aria-label="berth, overview">
          <Logo size={22} />
          <span>berth</span>
        </Link>
        <MainNav route={route} />
        <div className="top-tools">
          <ProjectSwitcher route={route} />
          <LiveIndicator />
          <ReplicaIndicator />
          <UserMenu onSignOut={onSignOut} />
        </div>
      </div>
    </header>
  );
}

function MainNav({ route }: { route: Route }) {
  const { project } = useApp();
  const jobsTo = project ? paths.jobs(project) : paths.jobsOfNoProject();
  const items: { label: string; to: string; active: boolean }[] = [
    { label: 'Overview', to: paths.overview(), active: route.page === 'overview' || route.page === 'queue' },
    { label: 'Projects', to: paths.projects(), active: route.page === 'projects' },
    { label: 'Usage', to: paths.usage(), active: route.page === 'usage' },
    {
      label: 'Jobs',
      to: jobsTo,
      active:
        route.page === 'jobs' ||
        route.page === 'job' ||
        route.page === 'array' ||
        route.page === 'no-project-jobs',
    },
    { label: 'Submit', to: paths.submit(), active: route.page === 'submit' },
  ];
  return (
    <nav aria-label="Main" className="main-nav">
      <ul>
        {items.map((i) => (
          <li key={i.label}>
            <Link to={i.to} aria-current={i.active ? 'page' : undefined}>
              {i.label}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}

function ProjectSwitcher({ route }: { route: Route }) {
  const { projects, project, setProject } = useApp();
  const names = projects?.map((p) => p.name) ?? (project ? [project] : []);
  if (project && !names.includes(project)) names.unshift(project);
  return (
    <label className="switcher">
      <span>Project</span>
      <select
        value={project ?? ''}
        disabled={names.length === 0}
        onChange={(e) => {
          const name = e.target.value;
          setProject(name);
          if (route.page === 'jobs' || route.page === 'no-project-jobs') navigate(paths.jobs(name));
        }}
      >
        {names.length === 0 && <option value="">{projects === null ? 'Loading…' : 'No projects'}</option>}
        {names.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    </label>
  );
}

/** Which replica this tab talks to, and which one leads (`GET /health`, read every 10 s). */
function ReplicaIndicator() {
  const [health, setHealth] = useState<Health | null>(null);
  useEffect(() => {
    const controller = new AbortController();
    const read = () =>
      void api.health(controller.signal).then(setHealth, () => {
        // Unreachable for a moment: keep what was last known; the live indicator says it.
      });
    read();
    const timer = setInterval(read, 10_000);
    return () => {
      clearInterval(timer);
      controller.abort();
    };
  }, []);
  if (!health) return null;
  const leads = health.role === 'leader';
  const title = leads
    ? `This server runs the scheduler (leader, term ${health.term})`
    : health.leader
      ? `This replica serves the API; the scheduler runs on the leader, ${health.leader} (term ${health.term})`
      : 'This replica serves the API; no replica leads at the moment (an election is under way)';
  return (
    <span className="replica" title={title} data-role={health.role}>
      {leads ? `leader · term ${health.term}` : 'follower'}
    </span>
  );
}

function LiveIndicator() {
  const status = useStreamStatus();
  const text = status === 'live' ? 'Live' : status === 'connecting' ? 'Connecting…' : 'Reconnecting…';
  const title =
    status === 'live'
      ? 'Updates arrive as they happen'
      : 'The live connection to the server is down; retrying';
  return (
    <span className={`live live-${status}`} title={title}>
      <span className="live-dot" aria-hidden="true" />
      {text}
    </span>
  );
}

function UserMenu({ onSignOut }: { onSignOut: () => void }) {
  const { user } = useApp();
  return (
    <div className="user">
      <span className="user-name" title={user.admin ? 'administrator' : undefined}>
        {user.name}
        {user.admin && <span className="badge">admin</span>}
      </span>
      <button type="button" className="button-quiet" onClick={onSignOut}>
        Sign out
      </button>
    </div>
  );
}
