/**
 * The cluster queues' figures over time, for the dashboard's charts: every `sampleSeconds` (10 s
 * by default) the sampler records, per cluster queue, what `GET /cluster-queues/{name}` shows on
 * this server at that moment — usage and borrowed quota per resource, the nominal quota, the
 * pending, admitted and running jobs — and how many jobs were admitted since the sample before.
 * On a follower replica those are the leader's published figures (replicas/live-figures.ts), so
 * every replica keeps its own history of the same figures.
 *
 * Memory is bounded: each queue has a ring buffer of `keepSeconds / sampleSeconds` samples
 * (2,160 by default: 6 hours; never more than MAX_HISTORY_SAMPLES, which the config enforces),
 * stored as columns of 8-byte numbers — 5 for the counts and time, plus 3 per resource the queue
 * has named — and grown by doubling up to that size. A queue with 3 resources thus costs at most
 * 2,160 × 14 × 8 B ≈ 240 kB; a deleted queue's buffer is dropped at the next sample. Nothing is
 * written to the store: a restarted server starts a new history.
 */
import { MAX_HISTORY_SAMPLES } from '../../config/schema.js';
import type { QueueHistorySample, QueueHistoryView } from '../../domain/queue-history.js';
import { isMilliResource, type Amounts } from '../../domain/quantity.js';
import type { Principal } from '../../domain/user.js';
import { getQueue } from '../cluster/cluster-queues.js';
import type { ServiceContext } from '../context.js';

export interface QueueHistorySettings {
  sampleSeconds: number;
  keepSeconds: number;
}

const COUNTS = ['pending', 'admitted', 'running', 'admissions'] as const;
const AMOUNTS = ['used', 'borrowed', 'nominal'] as const;

/** A fixed-capacity ring of samples, one typed column per figure (`at`, `pending`, `used:cpu`…). */
class SampleRing {
  /** Slots allocated in every column: doubles as samples arrive, up to `capacity`. */
  private allocated = 0;
  /** The slot of the oldest sample. */
  private start = 0;
  private count = 0;
  private readonly columns = new Map<string, Float64Array>();
  /** Per resource ever sampled here (sorted on read). */
  readonly resources = new Set<string>();
  /** The admissions counter at the last sample, to take differences. */
  lastCounter: number | undefined;

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.count;
  }

  /** Appends a sample; over capacity, the oldest is overwritten. Columns not given get NaN. */
  push(values: Map<string, number>): void {
    if (this.count === this.allocated && this.allocated < this.capacity) this.grow();
    let slot: number;
    if (this.count < this.allocated) {
      slot = (this.start + this.count) % this.allocated;
      this.count++;
    } else {
      slot = this.start;
      this.start = (this.start + 1) % this.allocated;
    }
    for (const [name, value] of values) this.column(name)[slot] = value;
    for (const [name, column] of this.columns) if (!values.has(name)) column[slot] = NaN;
  }

  /** The samples taken at `from` (epoch ms) or later, oldest first, as columns' values. */
  *since(from: number): Generator<(name: string) => number> {
    const at = this.columns.get('at');
    if (!at) return;
    for (let i = 0; i < this.count; i++) {
      const slot = (this.start + i) % this.allocated;
      if ((at[slot] ?? 0) < from) continue;
      yield (name) => this.columns.get(name)?.[slot] ?? NaN;
    }
  }

  private column(name: string): Float64Array {
    let c = this.columns.get(name);
    if (!c) {
      c = new Float64Array(this.allocated).fill(NaN);
      this.columns.set(name, c);
    }
    return c;
  }

  /** Only before the ring first wraps (it grows until full), so the samples are at slots 0…count-1. */
  private grow(): void {
    this.allocated = Math.min(this.capacity, Math.max(16, this.allocated * 2));
    for (const [name, old] of this.columns) {
      const c = new Float64Array(this.allocated).fill(NaN);
      c.set(old.subarray(0, this.count));
      this.columns.set(name, c);
    }
  }
}

/** An amount in base units: cpu is counted in millicores inside berth, shown in cores. */
const baseUnits = (resource: string, amount: number): number =>
  isMilliResource(resource) ? amount / 1000 : amount;

export class QueueHistory {
  readonly sampleMs: number;
  readonly keepMs: number;
  private readonly capacity: number;
  private readonly rings = new Map<string, SampleRing>();
  private timer: NodeJS.Timeout | undefined;
  private sampled = false;

  constructor(
    private readonly ctx: ServiceContext,
    settings: QueueHistorySettings,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.sampleMs = settings.sampleSeconds * 1000;
    this.keepMs = settings.keepSeconds * 1000;
    this.capacity = Math.min(MAX_HISTORY_SAMPLES, Math.max(1, Math.ceil(this.keepMs / this.sampleMs)));
  }

  /** Samples now, then every `sampleSeconds` until stop(). The timer keeps no process alive. */
  start(): void {
    if (this.timer) return;
    this.tick();
    this.timer = setInterval(() => this.tick(), this.sampleMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** How many samples a queue's buffer holds at most. */
  get samplesPerQueue(): number {
    return this.capacity;
  }

  private tick(): void {
    try {
      this.sample();
    } catch (e) {
      this.onError(e);
    }
  }

  /** One sample of every cluster queue this server knows (its controller's models, or the follower's). */
  sample(): void {
    const controller = this.ctx.runtime?.controller;
    if (!controller) return;
    const now = this.ctx.now();
    const seen = new Set<string>();
    for (const model of controller.queueModels()) {
      seen.add(model.name);
      const status = this.ctx.queueStatus?.(model.name);
      let ring = this.rings.get(model.name);
      if (!ring) {
        this.rings.set(model.name, (ring = new SampleRing(this.capacity)));
        // A queue made since the last sample: every admission the counter shows is new. At the
        // first sample, the counter's value (a follower's view of a long-running leader) is not.
        if (this.sampled) ring.lastCounter = 0;
      }
      const values = new Map<string, number>([
        ['at', now],
        ['pending', status?.pending ?? 0],
        ['admitted', status?.admitted ?? 0],
        ['running', status?.running ?? 0],
        ['admissions', admissionsSince(ring.lastCounter, status?.admissions)],
      ]);
      ring.lastCounter = status?.admissions;
      const amounts: Record<(typeof AMOUNTS)[number], Amounts> = {
        used: status?.usage ?? {},
        borrowed: status?.borrowed ?? {},
        nominal: model.nominal,
      };
      const resources = new Set([...Object.keys(model.nominal), ...Object.keys(amounts.used)]);
      for (const r of resources) {
        ring.resources.add(r);
        for (const kind of AMOUNTS) values.set(`${kind}:${r}`, baseUnits(r, amounts[kind][r] ?? 0));
      }
      ring.push(values);
    }
    for (const name of this.rings.keys()) if (!seen.has(name)) this.rings.delete(name);
    this.sampled = true;
  }

  /** The samples of the last `minutes` of queue `name`, oldest first (none for a queue not sampled yet). */
  view(name: string, minutes: number): QueueHistoryView {
    const ring = this.rings.get(name);
    const resources = [...(ring?.resources ?? [])].sort();
    const samples: QueueHistorySample[] = [];
    for (const get of ring?.since(this.ctx.now() - minutes * 60_000) ?? []) {
      const sample: QueueHistorySample = {
        at: new Date(get('at')).toISOString(),
        pending: 0,
        admitted: 0,
        running: 0,
        admissions: 0,
        used: {},
        borrowed: {},
        nominal: {},
      };
      for (const c of COUNTS) sample[c] = get(c);
      for (const r of resources)
        for (const kind of AMOUNTS) {
          const v = get(`${kind}:${r}`);
          if (!Number.isNaN(v)) sample[kind][r] = v;
        }
      samples.push(sample);
    }
    return {
      queue: name,
      intervalSeconds: this.sampleMs / 1000,
      keepSeconds: this.keepMs / 1000,
      resources,
      samples,
    };
  }
}

/**
 * Admissions since the last sample, from the controller's counter. The counter starts again at 0
 * when the controller is replaced (a restart, another leader): a smaller value than last time
 * means it restarted, and all of it is new.
 */
function admissionsSince(last: number | undefined, now: number | undefined): number {
  if (now === undefined || last === undefined) return 0;
  return now >= last ? now - last : now;
}

/** `GET /cluster-queues/{name}/history`: for anyone who may read the queue (404 if there is none). */
export async function queueHistoryOf(
  ctx: ServiceContext,
  p: Principal,
  name: string,
  minutes: number,
): Promise<QueueHistoryView> {
  await getQueue(ctx, p, name);
  return (
    ctx.queueHistory?.view(name, minutes) ?? {
      queue: name,
      intervalSeconds: 0,
      keepSeconds: 0,
      resources: [],
      samples: [],
    }
  );
}
