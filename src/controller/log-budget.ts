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

/** The longest start of `text` whose UTF-8 takes at most `bytes`, cut between characters. */
export function utf8Prefix(text: string, bytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= bytes) return text;
  let end = Math.max(0, bytes);
  // buf[end] is the first byte left out: if it continues a character, that character goes too.
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.toString('utf8', 0, end);
}

export class LogBudget {
  /** By tracked job: the entry goes with the job when the model drops it. */
  private readonly runs = new WeakMap<LoggingJob, RunLog>();

  constructor(
    private readonly logs: LogStore,
    private readonly db: Db,
    /** Bytes per run; Infinity: no bound. */
    private readonly max: number,
  ) {}

  /** Appends `text` to the job's log, or the part of it within the bound, or nothing. */
  append(job: LoggingJob, text: string): Promise<void> {
    if (this.max === Infinity) return this.logs.append(job.id, text);
    const attempt = job.attempts + 1;
    let run = this.runs.get(job);
    if (run?.attempt !== attempt) {
      run = { attempt, used: undefined, atLineStart: true, tail: Promise.resolve() };
      this.runs.set(job, run);
    }
    const current = run;
    const turn = current.tail.then(() => this.write(job.id, current, text));
    current.tail = turn.catch(() => {}); // the caller gets the failure; the next upload goes on
    return turn;
  }

  private async write(jobId: number, run: RunLog, text: string): Promise<void> {
    run.used ??= await this.usedSoFar(jobId, run.attempt);
    // Past the bound only once the notice is written (the output itself stops at the bound).
    if (run.used > this.max || text === '') return;
    const bytes = Buffer.byteLength(text, 'utf8');
    if (run.used + bytes <= this.max) {
      await this.logs.append(jobId, text);
      run.used += bytes;
      run.atLineStart = text.endsWith('\n');
      return;
    }
    const kept = utf8Prefix(text, this.max - run.used);
    const lineStart = kept === '' ? run.atLineStart : kept.endsWith('\n');
    const notice = `${lineStart ? '' : '\n'}berth: log limit of ${formatBytes(this.max)} reached; further output of this run is dropped (logs.maxBytesPerJob)\n`;
    await this.logs.append(jobId, kept + notice);
    run.used += Buffer.byteLength(kept + notice, 'utf8');
  }

  /** What the run has written already: its log from the previous attempt's end. */
  private async usedSoFar(jobId: number, attempt: number): Promise<number> {
    const previous =
      attempt === 1 ? undefined : (await listAttempts(this.db, jobId)).find((a) => a.attempt === attempt - 1);
    return this.logs.sizeAfter(jobId, previous?.logEnd ?? 0);
  }
}
