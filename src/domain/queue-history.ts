/**
 * A cluster queue's figures over time (`GET /cluster-queues/{name}/history`): what the server's
 * sampler (service/live/queue-history.ts) recorded every few seconds, oldest first.
 */

/** One sample. Amounts are in base units: cpu in cores, memory in bytes, anything else as counted. */
export interface QueueHistorySample {
  /** ISO 8601. */
  at: string;
  /** Jobs waiting in the queue. */
  pending: number;
  /** Jobs holding quota… */
  admitted: number;
  /** …and of those, how many had started. */
  running: number;
  /** Jobs admitted since the sample before (0 in the first one). */
  admissions: number;
  /** Per resource: quota in use, borrowed from the cohort (part of the use), and nominal quota. */
  used: Record<string, number>;
  borrowed: Record<string, number>;
  nominal: Record<string, number>;
}

export interface QueueHistoryView {
  queue: string;
  /** How often the server samples. */
  intervalSeconds: number;
  /** How far back the server keeps samples. */
  keepSeconds: number;
  /** Every resource that appears in the samples, sorted. */
  resources: string[];
  samples: QueueHistorySample[];
}
