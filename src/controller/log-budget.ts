/**
 * The bound on one run's output (config `logs.maxBytesPerJob`): what is uploaded past it is
 * dropped, and one line in the log says so. Counted here, at the server, since a job holds its
 * token and may call the upload route itself, as often and as much as it likes. Each attempt of
 * a job has its own bound, as for artifacts. What a run has written is read from the store at its
 * first upload to this controller, so a restarted server or a new leader counts on from there.
 */
import { formatBytes } from '../domain/artifact.js';
import type { LogStore } from '../store/log-store.js';
import { listAttempts } from '../store/queries/attempts.js';
import type { Db } from '../store/store.js';

/** What the budget needs of a job: its id, and which run it is on. */
export interface LoggingJob {
  readonly id: number;
  /** Attempts ended before the current one. */
  readonly attempts: number;
}

interface RunLog {
  /** The run counted: the job's attempt. */
  attempt: number;
  /** Bytes of the run's output kept; undefined until read from the store. */
  used: number | undefined;
  /** Whether the kept output ends a line, so that the notice starts one. */
  atLineStart: boolean;
  /** Its uploads, one at a time: the count stays true and the notice is written once. */
  tail: Promise<void>;
}

/**
 * The first `bytes` of `data` at most, cut before a UTF-8 character that would not fit whole
 * (output that is not UTF-8 is cut at most 3 bytes short of the bound: a continuation byte goes
 * with what it seems to continue).
 */
export function utf8Prefix(data: Buffer, bytes: number): Buffer {
  if (data.length <= bytes) return data;
  let end = Math.max(0, bytes);
  // data[end] is the first byte left out: if it continues a character, that character goes too.
  for (let back = 0; back < 3 && end > 0 && (data[end]! & 0xc0) === 0x80; back++) end--;
  return data.subarray(0, end);
}

const NEWLINE = 0x0a;

export class LogBudget {
  /** By tracked job: the entry goes with the job when the model drops it. */
  private readonly runs = new WeakMap<LoggingJob, RunLog>();

  constructor(
    private readonly logs: LogStore,
    private readonly db: Db,
    /** Bytes per run; Infinity: no bound. */
    private readonly max: number,
  ) {}

  /** Appends `data` to the job's log, or the part of it within the bound, or nothing. */
  append(job: LoggingJob, data: Buffer): Promise<void> {
    if (this.max === Infinity) return this.logs.append(job.id, data);
    const attempt = job.attempts + 1;
    let run = this.runs.get(job);
    if (run?.attempt !== attempt) {
      run = { attempt, used: undefined, atLineStart: true, tail: Promise.resolve() };
      this.runs.set(job, run);
    }
    const current = run;
    const turn = current.tail.then(() => this.write(job.id, current, data));
    current.tail = turn.catch(() => {}); // the caller gets the failure; the next upload goes on
    return turn;
  }

  private async write(jobId: number, run: RunLog, data: Buffer): Promise<void> {
    run.used ??= await this.usedSoFar(jobId, run.attempt);
    // Past the bound only once the notice is written (the output itself stops at the bound).
    if (run.used > this.max || data.length === 0) return;
    if (run.used + data.length <= this.max) {
      await this.logs.append(jobId, data);
      run.used += data.length;
      run.atLineStart = data.at(-1) === NEWLINE;
      return;
    }
    const kept = utf8Prefix(data, this.max - run.used);
    const lineStart = kept.length === 0 ? run.atLineStart : kept.at(-1) === NEWLINE;
    const notice = `${lineStart ? '' : '\n'}berth: log limit of ${formatBytes(this.max)} reached; further output of this run is dropped (logs.maxBytesPerJob)\n`;
    const written = Buffer.concat([kept, Buffer.from(notice, 'utf8')]);
    await this.logs.append(jobId, written);
    run.used += written.length;
  }

  /** What the run has written already: its log from the previous attempt's end. */
  private async usedSoFar(jobId: number, attempt: number): Promise<number> {
    const previous =
      attempt === 1 ? undefined : (await listAttempts(this.db, jobId)).find((a) => a.attempt === attempt - 1);
    return this.logs.sizeAfter(jobId, previous?.logEnd ?? 0);
  }
}
