import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';
import { bigint } from './helpers.js';

/**
 * Job lists that stay fast with 100,000 jobs in a project: the priority orders served by an
 * index, and per-project per-state job counts kept by triggers, so that counting never scans.
 */
export const jobLists: BerthMigration = {
  async up(db, dialect) {
    // Serves sort=priority and sort=-priority, one state at a time (the id orders already have
    // jobs_project and jobs_project_state). One index serves both directions: ties go to the
    // newest job either way, so the list walks it one priority at a time (see listJobRows)
    // rather than paying for a second index on every insert and every state change.
    await db.schema
      .createIndex('jobs_project_state_priority')
      .on('jobs')
      .columns(['project', 'state', 'priority', 'id'])
      .execute();

    await db.schema
      .createTable('job_counts')
      .addColumn('project', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('n', bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('job_counts_pk', ['project', 'state'])
      .execute();
    await sql`INSERT INTO job_counts (project, state, n)
      SELECT project, state, count(*) FROM jobs GROUP BY project, state`.execute(db);

    // Triggers rather than application code, so that every path that writes jobs (and a
    // seeding script writing the file directly) keeps the counts exact, in the same transaction.
    if (dialect === 'sqlite') {
      const increment = sql`INSERT INTO job_counts (project, state, n) VALUES (NEW.project, NEW.state, 1)
        ON CONFLICT (project, state) DO UPDATE SET n = n + 1;`;
      const decrement = sql`UPDATE job_counts SET n = n - 1 WHERE project = OLD.project AND state = OLD.state;`;
      await sql`CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN ${increment} END`.execute(db);
      await sql`CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs
        WHEN OLD.state IS NOT NEW.state BEGIN ${decrement} ${increment} END`.execute(db);
      await sql`CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN ${decrement} END`.execute(db);
    } else {
      await sql`CREATE FUNCTION berth_job_counts() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP IN ('UPDATE', 'DELETE') THEN
            UPDATE job_counts SET n = n - 1 WHERE project = OLD.project AND state = OLD.state;
          END IF;
          IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO job_counts (project, state, n) VALUES (NEW.project, NEW.state, 1)
              ON CONFLICT (project, state) DO UPDATE SET n = job_counts.n + 1;
          END IF;
          RETURN NULL;
        END $$`.execute(db);
      await sql`CREATE TRIGGER jobs_count_insert_delete AFTER INSERT OR DELETE ON jobs
        FOR EACH ROW EXECUTE FUNCTION berth_job_counts()`.execute(db);
      await sql`CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs
        FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION berth_job_counts()`.execute(
        db,
      );
    }
  },
};
