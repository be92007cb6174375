/**
 * The controller's writes: every transition is one unit — the change and its event together —
 * on the group commit it shares with the submissions. The job changes a unit records are
 * announced to the live stream once it has committed and the caller has moved the model on.
 */
import type { JobState } from '../domain/job.js';
import { GroupCommit } from '../store/group-commit.js';
import { appendEvent } from '../store/queries/events.js';
import type { Db, Store } from '../store/store.js';

/** What an event needs to know of its job. */
interface Subject {
  id: number;
  project: string;
  /** Read when the change is announced: by then it holds the state the unit recorded. */
  readonly state: JobState;
}

/** What the journal writes to and tells (a part of ControllerOptions, core.ts). */
export interface JournalOptions {
  store: Store;
  now: () => number;
  /**
   * Shares transactions with other writers (the submissions'). Every transition is one unit with
   * its event, committed or rolled back alone; units written at the same time share a commit.
   */
  groupCommit?: GroupCommit;
  /**
   * Checks, inside each transaction of the rebuild on start, that this server still leads (the
   * group commit's batches check it themselves); throws to refuse the write. Replicas only.
   */
  fence?: (tx: Db) => Promise<void>;
  /**
   * A transition could not be written (the store failed): the model no longer matches the store.
   * A replica steps down and rebuilds from the store; without this, the failure is only reported.
   */
  onWriteFailed?: (err: unknown) => void;
  /** A job changed (a transition, a cancel request, its cleanup): for the live stream. */
  onJobChanged?: (id: number, project: string, state: JobState, reason: string) => void;
}

/** One unit of change: its transaction, and the job events it records. */
export interface Unit {
  db: Db;
  event: (job: Subject, type: string, message: string, data?: unknown) => Promise<void>;
}

export class Journal {
  private readonly commits: GroupCommit;
  /**
   * While the model is rebuilt on start, no pass may run: it would see the quota of admitted jobs
   * not yet restored as free. Writes then go straight to the store, one transaction each.
   */
  private direct = true;

  constructor(private readonly o: JournalOptions) {
    this.commits = o.groupCommit ?? new GroupCommit(o.store);
  }

  /** The rebuild on start is over: from now on writes share commits. */
  started(): void {
    this.direct = false;
  }

  get starting(): boolean {
    return this.direct;
  }

  /** One unit of change, committed with whatever else is written now. */
  async write<T>(fn: (u: Unit) => Promise<T>): Promise<T> {
    const changed: [Subject, string][] = [];
    const run = (db: Db) => {
      changed.length = 0; // a batch may be run again (group-commit.ts): only the last run counts
      return fn({
        db,
        event: async (job, type, message, data) => {
          await appendEvent(
            db,
            {
              subjectKind: 'job',
              subject: String(job.id),
              project: job.project,
              jobId: job.id,
              type,
              message,
              data,
            },
            this.o.now(),
          );
          changed.push([job, message]);
        },
      });
    };
    const fenced = async (db: Db) => {
      await this.o.fence?.(db);
      return run(db);
    };
    let result: T;
    try {
      result = await (this.direct ? this.o.store.transaction(fenced) : this.commits.run(run));
    } catch (e) {
      this.o.onWriteFailed?.(e);
      throw e;
    }
    // After the commit, and after the caller's continuation has set the new state in the model.
    const announce = this.o.onJobChanged;
    if (announce && changed.length > 0)
      setImmediate(() => {
        for (const [job, message] of changed) announce(job.id, job.project, job.state, message);
      });
    return result;
  }

  /** Announces a change that has no event of its own (a job's cleanup). */
  announce(job: Subject, reason: string): void {
    this.o.onJobChanged?.(job.id, job.project, job.state, reason);
  }
}
