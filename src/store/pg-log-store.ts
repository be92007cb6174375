/**
 * Job output in PostgreSQL's `job_logs`, one row per upload, so that every replica reads and
 * follows every job's log. A follower reads the rows after the last it sent; it is woken by a
 * notification on the bus (an append or the job's end on any replica) and checks once a second
 * in any case. It finishes when the job has ended — its state is terminal in the store, which the
 * agent reaches only after uploading all of its output — and no row is left to send.
 */
import { sql } from 'kysely';
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import { isTerminal, type JobState } from '../domain/job.js';
import type { PgBus } from './pg-bus.js';
import { notify } from './pg-bus.js';
import { followLog, type LogRange, type LogStore } from './log-store.js';
import type { Db } from './store.js';

const CHANNEL = 'berth_logs';
/** Rows read per query while catching up. */
const PAGE = 500;

export class PgLogStore implements LogStore {
  private readonly emitter = new EventEmitter();
  private closed = false;
  private bus: PgBus | undefined;

  constructor(
    private readonly db: Db,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.emitter.setMaxListeners(0);
  }

  /** Hears of appends and ends on other replicas, and tells them of this one's. */
  async listen(bus: PgBus): Promise<void> {
    this.bus = bus;
    await bus.subscribe(CHANNEL, (m) => this.emitter.emit(String(m)));
  }

  async append(jobId: number, data: Buffer): Promise<void> {
    if (data.length === 0) return;
    await this.db.transaction().execute(async (tx) => {
      // Bytes, as written: output may hold a NUL or bytes that are not UTF-8, which a text column
      // cannot (migration 0018).
      await tx.insertInto('job_logs').values({ job_id: jobId, data }).execute();
      if (this.bus) await notify(tx, CHANNEL, [jobId]);
    });
    this.emitter.emit(String(jobId));
  }

  ended(jobId: number): void {
    this.emitter.emit(String(jobId));
    if (this.bus) void notify(this.db, CHANNEL, [jobId]).catch(this.onError);
  }

  async discard(jobIds: number[]): Promise<void> {
    if (jobIds.length > 0) await this.db.deleteFrom('job_logs').where('job_id', 'in', jobIds).execute();
  }

  close(): void {
    this.closed = true;
    for (const name of this.emitter.eventNames()) this.emitter.emit(name);
  }

  async mark(jobId: number): Promise<number> {
    const row = await this.db
      .selectFrom('job_logs')
      .select((eb) => eb.fn.max('id').as('last'))
      .where('job_id', '=', jobId)
      .executeTakeFirst();
    return Number(row?.last ?? 0);
  }

  async sizeAfter(jobId: number, after: number): Promise<number> {
    const row = await this.db
      .selectFrom('job_logs')
      .select(sql<string | null>`sum(octet_length(data))`.as('bytes'))
      .where('job_id', '=', jobId)
      .where('id', '>', after)
      .executeTakeFirst();
    return Number(row?.bytes ?? 0);
  }

  private async rows(
    jobId: number,
    after: number,
    upTo: number | null = null,
  ): Promise<{ id: number; data: Buffer }[]> {
    let q = this.db
      .selectFrom('job_logs')
      .select(['id', 'data'])
      .where('job_id', '=', jobId)
      .where('id', '>', after);
    if (upTo !== null) q = q.where('id', '<=', upTo);
    return q.orderBy('id').limit(PAGE).execute();
  }

  read(jobId: number, range?: LogRange): Readable {
    const rows = (after: number) => this.rows(jobId, after, range?.upTo ?? null);
    const first = range?.after ?? 0;
    async function* stream(): AsyncGenerator<Buffer> {
      for (let after = first; ;) {
        const page = await rows(after);
        for (const r of page) yield r.data;
        if (page.length < PAGE) return;
        after = page.at(-1)!.id;
      }
    }
    return Readable.from(stream());
  }

  follow(jobId: number, isDone: () => boolean): Readable {
    const { db } = this;
    const rows = (after: number) => this.rows(jobId, after);
    let after = 0;
    return followLog(this.emitter, jobId, {
      ended: async () => {
        if (isDone()) return true;
        const row = await db.selectFrom('jobs').select('state').where('id', '=', jobId).executeTakeFirst();
        return row === undefined || isTerminal(row.state as JobState);
      },
      more: async function* () {
        const page = await rows(after);
        for (const r of page) yield r.data;
        if (page.length > 0) after = page.at(-1)!.id;
      },
      closed: () => this.closed,
    });
  }
}
