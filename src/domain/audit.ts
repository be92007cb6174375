/**
 * The audit log's words and view: who changed what through the API, when and from where. Pure:
 * no I/O. What a row never holds: a token, resource metadata, a job's env values or command.
 */
import { BadRequestError } from './errors.js';

/** Who acted: a user; a job through its job token; a job's project token; the server itself. */
export type AuditActorKind = 'user' | 'job' | 'project-token' | 'system';

/** What was done, as `subject-kind.verb`. */
export type AuditAction =
  | 'user.create'
  | 'user.delete'
  | 'token.create'
  | 'token.revoke'
  | 'queue.create'
  | 'queue.update'
  | 'queue.delete'
  | 'project.create'
  | 'project.update'
  | 'project.delete'
  | 'member.set'
  | 'member.remove'
  | 'privilege.grant'
  | 'privilege.revoke'
  | 'priority-class.create'
  | 'priority-class.delete'
  | 'job.submit'
  | 'job.cancel'
  | 'job.exec'
  | 'job.exec-refused'
  | 'job.port-forward'
  | 'job.attach'
  | 'image.prune'
  | 'registry.login'
  | 'registry.logout';

/** `GET /audit`: one change. */
export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  actorKind: AuditActorKind;
  /** The request's remote address; null for what the server did itself (its first start). */
  address: string | null;
  action: AuditAction;
  /** The name or id of what changed: a user, a token's id, a queue, a project, a job. */
  subject: string;
  /** The project it happened in, if any. */
  project: string | null;
  /** A few fields of the change (never a secret). */
  detail?: Record<string, unknown>;
}

/** Newest first; a page ends after the entry with this id. */
export function encodeAuditCursor(id: number): string {
  return Buffer.from(JSON.stringify(['audit', id])).toString('base64url');
}

export function decodeAuditCursor(cursor: string): number {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed[0] !== 'audit' || !Number.isSafeInteger(parsed[1]))
    throw new BadRequestError(
      'cursor: not a cursor of the audit log; use the X-Next-Cursor of the previous page',
    );
  return parsed[1] as number;
}
