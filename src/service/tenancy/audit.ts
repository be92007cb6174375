/**
 * The audit log: every change made through the API, with who made it, from which address and
 * when. A service records its change's row with `audit(db, …)` inside the transaction that makes
 * the change, so that the row and the change are committed — or lost to a crash — together;
 * submissions record theirs in bulk, with their batch (service/jobs/submission-writer.ts).
 *
 * What a row may hold is chosen here and by the callers, and is never a secret: no token (a
 * token is named by its public id), no resource metadata, no job command or env values (only the
 * env names).
 */
import { BadRequestError } from '../../domain/errors.js';
import {
  decodeAuditCursor,
  encodeAuditCursor,
  type AuditAction,
  type AuditEntry,
} from '../../domain/audit.js';
import type { Principal } from '../../domain/user.js';
import { insertAudit, listAudit, type AuditRecord } from '../../store/queries/audit.js';
import type { Db } from '../../store/store.js';
import { actorName, requireAdmin } from './access.js';
import type { ServiceContext } from '../context.js';

/** A change to record. */
export interface AuditChange {
  action: AuditAction;
  subject: string;
  project?: string | null;
  detail?: Record<string, unknown>;
}

/** Who acted, from where: `undefined` is the server itself (its first start). */
export function auditActor(p: Principal | undefined): Pick<AuditRecord, 'actor' | 'actorKind' | 'address'> {
  if (!p) return { actor: 'system', actorKind: 'system', address: null };
  const actorKind = p.kind === 'user' ? 'user' : p.kind === 'job' ? 'job' : 'project-token';
  return { actor: actorName(p), actorKind, address: p.from ?? null };
}

/** Records `change` by `p` in transaction `db` (the one that makes the change). */
export async function audit(
  db: Db,
  p: Principal | undefined,
  change: AuditChange,
  now: number,
): Promise<void> {
  await insertAudit(db, [{ ...auditActor(p), ...change, at: now }]);
}

export interface AuditQuery {
  /** ISO 8601 times. */
  since?: string;
  until?: string;
  user?: string;
  project?: string;
  limit?: number;
  cursor?: string;
}

export interface AuditPage {
  entries: AuditEntry[];
  /** Where the next (older) page starts; absent on the last page. */
  nextCursor?: string;
}

function time(field: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  if (!Number.isFinite(ms))
    throw new BadRequestError(`${field}: "${text}" is not a time; write e.g. 2030-01-31T12:00:00Z`);
  return ms;
}

/** A page of the audit log, newest first (admins only). */
export async function readAudit(ctx: ServiceContext, p: Principal, q: AuditQuery): Promise<AuditPage> {
  requireAdmin(p, 'read the audit log');
  const limit = q.limit ?? 100;
  // One more than asked: whether it exists says whether there is a next page.
  const rows = await listAudit(ctx.store.db, {
    since: time('since', q.since),
    until: time('until', q.until),
    actor: q.user,
    project: q.project,
    before: q.cursor === undefined ? undefined : decodeAuditCursor(q.cursor),
    limit: limit + 1,
  });
  const entries = rows.slice(0, limit);
  const last = entries.at(-1);
  return { entries, nextCursor: rows.length > limit && last ? encodeAuditCursor(last.id) : undefined };
}
