/**
 * How long a job will run, for start-time estimates (scheduler/forecast.ts): the runtimes observed
 * for similar jobs (same project, name and target) first, then the job's timeout, then what the
 * queue's jobs took, then an assumption. Each expectation says which it used, so an estimate can
 * say how it was made. Pure and bounded: a few recent runtimes per kind of job, for a bounded
 * number of kinds, the least recently seen forgotten first.
 */

/** What an expected runtime rests on, best first. */
export type RuntimeBasis = 'similar' | 'timeout' | 'queue' | 'assumed';

export interface ExpectedRuntime {
  ms: number;
  basis: RuntimeBasis;
}

/** What the history needs to know of a job. */
export interface RuntimeSubject {
  project: string;
  name: string;
  target: string;
  queue: string;
  timeoutSeconds: number | null;
}

/** Runtimes kept per kind of job and per queue: recent ones, as a median of them is asked for. */
const KEEP = 20;
/** Kinds of job remembered at most (a few hundred KiB at worst). */
const MAX_KINDS = 10_000;
/** Without any observation or timeout, a job is assumed to run this long. */
export const ASSUMED_RUNTIME_MS = 3600_000;

export const similarityKey = (j: Pick<RuntimeSubject, 'project' | 'name' | 'target'>): string =>
  `${j.project}\u0000${j.name}\u0000${j.target}`;

/** The last few samples and their median. */
class Recent {
  private readonly samples: number[] = [];
  private next = 0;
  /** The median, kept until the next sample: a forecast asks for it once per job. */
  private cached: number | null = null;

  add(ms: number): void {
    this.cached = null;
    if (this.samples.length < KEEP) this.samples.push(ms);
    else this.samples[this.next] = ms;
    this.next = (this.next + 1) % KEEP;
  }

  get count(): number {
    return this.samples.length;
  }

  median(): number {
    return (this.cached ??= this.computeMedian());
  }

  private computeMedian(): number {
    const sorted = [...this.samples].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  }
}

export class RuntimeHistory {
  /** Map order is recency: a kind seen again moves to the end; the first is forgotten first. */
  private readonly kinds = new Map<string, Recent>();
  private readonly queues = new Map<string, Recent>();

  constructor(private readonly maxKinds = MAX_KINDS) {}

  /** A job of this kind ran for `ms`. */
  record(job: Omit<RuntimeSubject, 'timeoutSeconds'>, ms: number): void {
    if (!(ms >= 0)) return;
    const key = similarityKey(job);
    const recent = this.kinds.get(key) ?? new Recent();
    this.kinds.delete(key);
    this.kinds.set(key, recent);
    recent.add(ms);
    if (this.kinds.size > this.maxKinds) this.kinds.delete(this.kinds.keys().next().value!);
    let q = this.queues.get(job.queue);
    if (!q) this.queues.set(job.queue, (q = new Recent()));
    q.add(ms);
  }

  /** How long `job` is expected to run, and on what that rests. Capped by its timeout. */
  expected(job: RuntimeSubject): ExpectedRuntime {
    const timeoutMs = job.timeoutSeconds === null ? Infinity : job.timeoutSeconds * 1000;
    const similar = this.kinds.get(similarityKey(job));
    if (similar) return { ms: Math.min(similar.median(), timeoutMs), basis: 'similar' };
    if (timeoutMs !== Infinity) return { ms: timeoutMs, basis: 'timeout' };
    const queue = this.queues.get(job.queue);
    if (queue) return { ms: queue.median(), basis: 'queue' };
    return { ms: ASSUMED_RUNTIME_MS, basis: 'assumed' };
  }

  /** Kinds of job with observed runtimes. */
  get size(): number {
    return this.kinds.size;
  }
}

/**
 * When a job that started at `startedAt` is expected to end. One that has outlived its
 * expectation ends by its timeout if it has one; otherwise it is given a quarter of its age again
 * (at least a minute): long runners tend to run on.
 */
export function expectedEnd(
  startedAt: number,
  expected: ExpectedRuntime,
  timeoutSeconds: number | null,
  now: number,
): number {
  const end = startedAt + expected.ms;
  if (end > now) return end;
  if (timeoutSeconds !== null && startedAt + timeoutSeconds * 1000 > now)
    return startedAt + timeoutSeconds * 1000;
  return now + Math.max(60_000, (now - startedAt) / 4);
}

/** "expected runtimes of 12 jobs: 9 from similar jobs, 2 from timeouts, 1 assumed (1h)" */
export function describeBases(counts: Record<RuntimeBasis, number>): string {
  const total = counts.similar + counts.timeout + counts.queue + counts.assumed;
  if (total === 0) return 'no job ahead holds or needs quota';
  const parts = [
    counts.similar > 0 ? `${counts.similar} from similar jobs' runtimes` : '',
    counts.timeout > 0 ? `${counts.timeout} from timeouts` : '',
    counts.queue > 0 ? `${counts.queue} from their queue's runtimes` : '',
    counts.assumed > 0 ? `${counts.assumed} assumed to run ${ASSUMED_RUNTIME_MS / 3600_000}h` : '',
  ].filter(Boolean);
  return `expected runtimes of ${total} job${total === 1 ? '' : 's'}: ${parts.join(', ')}`;
}
