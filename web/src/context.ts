/** What every page may read: the signed-in user, the visible projects and the current one. */
import { createContext, useContext } from 'react';
import type { ProjectView, User } from './types.js';

export interface AppState {
  user: User;
  /** Null until loaded. */
  projects: ProjectView[] | null;
  /** The current project (the switcher's), or null when there is none. */
  project: string | null;
  setProject: (name: string) => void;
  reloadProjects: () => Promise<void>;
}

export const AppContext = createContext<AppState | null>(null);

export function useApp(): AppState {
  const s = useContext(AppContext);
  if (!s) throw new Error('useApp outside the signed-in app');
  return s;
}
