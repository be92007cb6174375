/**
 * The store and the connections that stay open, as an operator watches them (issue #43): how long
 * a group commit's batch takes to write and a read statement to answer (histograms: the alert on
 * store latency is written over them, deploy/prometheus/berth-rules.yml), how many units each
 * batch carries (what group commit saves: one transaction for many writes), and the streams held
 * open now — dashboard event streams, followed logs, exec sessions, remote agents' channels.
 */
import { Gauge, Histogram, type Registry } from 'prom-client';

/** What stays open on the API: `events` (GET /stream), `logs` (a followed log), `exec` (berth exec, attach, port-forward), `agent` (a remote agent's channel). */
export const STREAM_KINDS = ['events', 'logs', 'exec', 'agent'] as const;
export type StreamKind = (typeof STREAM_KINDS)[number];

/**
 * Seconds, from a tenth of a millisecond (a SQLite read, an idle scheduler pass) to 5 s (a store
 * in trouble, a pass far past any target): the store's latencies and the scheduler's passes.
 */
export const LATENCY_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
];
/** Units per batch: at most 256 (store/group-commit.ts). */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

export class StoreMetrics {
  private readonly writes: Histogram;
  private readonly reads: Histogram;
  private readonly units: Histogram;
  private readonly streams: Gauge<'kind'>;

  constructor(registers: Registry[]) {
    this.writes = new Histogram({
      name: 'berth_store_write_seconds',
      help: "Time to write one group commit's batch: its transaction from begin to commit, a run again after a conflict included",
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.reads = new Histogram({
      name: 'berth_store_read_seconds',
      help: 'Time of one read statement (a SELECT) of the services or the controller',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.units = new Histogram({
      name: 'berth_store_batch_units',
      help: "Units of work (a submission's rows, a job's transition with its event, …) written together in one group commit's transaction",
      buckets: BATCH_BUCKETS,
      registers,
    });
    this.streams = new Gauge({
      name: 'berth_open_streams',
      help: 'Streams open now on this server, by kind: events (dashboard streams), logs (followed logs), exec (exec, attach and port-forward sessions), agent (remote agents’ channels)',
      labelNames: ['kind'],
      registers,
    });
    for (const kind of STREAM_KINDS) this.streams.set({ kind }, 0);
  }

  /** A group commit wrote `units` in one transaction, in `seconds` (store/store.ts StoreObserver). */
  batch(units: number, seconds: number): void {
    this.units.observe(units);
    this.writes.observe(seconds);
  }

  /** A read statement took `seconds`. */
  read(seconds: number): void {
    this.reads.observe(seconds);
  }

  /** A stream of `kind` opened: counted until the function returned is called (once counts). */
  streamOpened(kind: StreamKind): () => void {
    this.streams.inc({ kind });
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      this.streams.dec({ kind });
    };
  }
}
