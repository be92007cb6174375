/** Users and the principals that requests act as. */
import type { ProjectTokenAccess } from './project-token-access.js';

export interface User {
  id: number;
  name: string;
  admin: boolean;
  createdAt: string;
}

/** Who is calling: a user (through one of its tokens) or a job (through its job token). */
export type Principal = (
  | { kind: 'user'; user: User }
  | { kind: 'job'; jobId: number }
  /**
   * A token from the `token` well, on behalf of one running job: reads its one project, and with
   * `access: submit` also submits and cancels jobs there (service/tenancy/access.ts decides).
   */
  | { kind: 'project'; project: string; jobId: number; access: ProjectTokenAccess }
) & {
  /**
   * The address the request came from (Fastify's `request.ip`), for the audit log; absent for
   * callers inside the server.
   */
  from?: string;
};

/** `GET /whoami`: the caller. Job and project tokens name the job they act for. */
export type WhoAmI =
  | ({ kind: 'user' } & Pick<User, 'name' | 'admin' | 'createdAt'>)
  | { kind: 'job'; job: number }
  | { kind: 'project-token'; project: string; job: number };
