/** The audit log (migration 0012): rows in, pages out, newest first. */
import type { Insertable } from 'kysely';
import type { AuditAction, AuditActorKind, AuditEntry } from '../../domain/audit.js';
import type { AuditLogTable } from '../schema.js';
import type { Db } from '../store.js';
import { insertRows } from './bulk-insert.js';
import { iso } from './time.js';
import { dialectOf } from './statement-text.js';

/** One change, as the services record it. */
export interface AuditRecord {
  at: number;
  actor: string;
  actorKind: AuditActorKind;
  address: string | null;
  action: AuditAction;
  subject: string;
  project?: string | null;
  detail?: Record<string, unknown>;
}

const toValues = (r: AuditRecord): Insertable<AuditLogTable> => ({
  at: r.at,
  actor: r.actor,
  actor_kind: r.actorKind,
  address: r.address,
  action: r.action,
  subject: r.subject,
  project: r.project ?? null,
  detail: r.detail === undefined ? null : JSON.stringify(r.detail),
});

const COLUMNS = Object.keys(toValues({} as AuditRecord));

/**
 * Inserts the rows in transaction `db`. `bulk` (a batch of submissions: store/queries/
 * bulk-insert.ts): as statements written once per row count; else through Kysely's builder.
 */
export async function insertAudit(db: Db, rows: AuditRecord[], bulk = false): Promise<void> {
  if (rows.length === 0) return;
  if (bulk) {
    const values = rows.map((r) => Object.values(toValues(r)));
    return insertRows(db, dialectOf(db), 'audit_log', COLUMNS, values);
  }
  await db.insertInto('audit_log').values(rows.map(toValues)).execute();
}

export interface AuditFilter {
  /** ms, inclusive. */
  since?: number;
  /** ms, exclusive. */
  until?: number;
  actor?: string;
  project?: string;
  /** Only entries older than this id (the cursor). */
  before?: number;
  limit: number;
}

export async function listAudit(db: Db, f: AuditFilter): Promise<AuditEntry[]> {
  let q = db.selectFrom('audit_log').selectAll();
  if (f.since !== undefined) q = q.where('at', '>=', f.since);
  if (f.until !== undefined) q = q.where('at', '<', f.until);
  if (f.actor !== undefined) q = q.where('actor', '=', f.actor);
  if (f.project !== undefined) q = q.where('project', '=', f.project);
  if (f.before !== undefined) q = q.where('id', '<', f.before);
  const rows = await q.orderBy('id', 'desc').limit(f.limit).execute();
  return rows.map((r) => ({
    id: Number(r.id),
    at: iso(r.at),
    actor: r.actor,
    actorKind: r.actor_kind as AuditActorKind,
    address: r.address,
    action: r.action as AuditAction,
    subject: r.subject,
    project: r.project,
    ...(r.detail === null ? {} : { detail: JSON.parse(r.detail) as Record<string, unknown> }),
  }));
}
