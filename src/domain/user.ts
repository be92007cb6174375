/** Users and the principals that requests act as. */
export interface User {
  id: number;
  name: string;
  admin: boolean;
  createdAt: string;
}

/** Who is calling: a user (through one of its tokens) or a job (through its job token). */
export type Principal =
  | { kind: 'user'; user: User }
  | { kind: 'job'; jobId: number }
  /** A token from the `token` well: a member of one project, on behalf of one running job. */
  | { kind: 'project'; project: string; jobId: number };

/** `GET /whoami`: the caller. Job and project tokens name the job they act for. */
export type WhoAmI =
  | ({ kind: 'user' } & Pick<User, 'name' | 'admin' | 'createdAt'>)
  | { kind: 'job'; job: number }
  | { kind: 'project-token'; project: string; job: number };
