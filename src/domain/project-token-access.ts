/** The rights of a project token (what the `token` well hands a job): no I/O, so the dashboard may share it. */
import type { Role } from './roles.js';

/**
 * What a project token (the `token` well's) may do in its one project. It is handed to a job's
 * process, which may leak it (logs, a test's output), so it gets the least by default:
 *
 * - `read` — read the project, its jobs, their logs and events;
 * - `submit` — also submit jobs to the project and cancel jobs there, as a member may.
 *
 * Nothing more can be configured: no token well's token changes a project, reaches another one,
 * an admin endpoint, or any resource's metadata.
 */
export const PROJECT_TOKEN_ACCESS = ['read', 'submit'] as const;
export type ProjectTokenAccess = (typeof PROJECT_TOKEN_ACCESS)[number];
export const DEFAULT_PROJECT_TOKEN_ACCESS: ProjectTokenAccess = 'read';

/** The project role a project token's access stands for, for the services' role checks. */
export function projectTokenRole(access: ProjectTokenAccess): Extract<Role, 'viewer' | 'member'> {
  return access === 'submit' ? 'member' : 'viewer';
}
