/** The caller's role in a project (what the pages' buttons depend on), asked once per session. */
import { api, currentToken } from './api.js';
import type { Role } from './types.js';

const roles = new Map<string, Promise<Role | 'admin' | null>>();

export function roleIn(project: string): Promise<Role | 'admin' | null> {
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

/** Whether a role may cancel jobs (and arrays) in its project. */
export const mayCancelAs = (role: Role | 'admin' | null): boolean =>
  role === 'admin' || role === 'owner' || role === 'member';
