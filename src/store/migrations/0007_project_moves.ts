import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';

/**
 * Finds the unfinished jobs that name a cluster queue, so that a queue is never deleted under
 * them. Partial: it holds only the few unfinished jobs, so inserts and ends stay cheap.
 */
export const projectMoves: BerthMigration = {
  async up(db) {
    await sql`CREATE INDEX jobs_queue_unfinished ON jobs (cluster_queue)
      WHERE state IN ('queued', 'admitted', 'running')`.execute(db);
  },
};
