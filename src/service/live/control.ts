/**
 * Control messages: committed changes the leading replica's controller must act on, sent inside the
 * transaction that makes the change (on PostgreSQL, through the bus; on SQLite there is one server
 * and nothing to send): what the outbox sends of a service's notices (notices.ts,
 * replicas/outbox.ts).
 */
export type ControlMessage =
  /** A job was submitted. */
  | { kind: 'submitted'; id: number }
  /** A job array was submitted: its tasks, named by its id (the first task's). */
  | { kind: 'array-submitted'; id: number }
  /** Cancelling every unfinished task of an array was requested and recorded. */
  | { kind: 'array-cancel'; id: number; by: string }
  /** Cancelling a job was requested and recorded. */
  | { kind: 'cancel'; id: number; by: string }
  /** A cluster queue was created, changed or deleted. */
  | { kind: 'queue'; name: string }
  /** A project's fair-share weight changed (or it was created or deleted). */
  | { kind: 'weight'; project: string }
  /** A project moved to another queue, or its privileges changed: the leader reads it again. */
  | { kind: 'project'; project: string }
  /**
   * A project was deleted: its unfinished jobs are filed under `archivedAs`, and cancelled by `by`
   * (a replica of an earlier berth sends no `by`, and a `cancel` message for each job instead).
   */
  | { kind: 'project-deleted'; project: string; archivedAs: string; by?: string };
