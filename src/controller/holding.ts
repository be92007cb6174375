/**
 * Something a job holds that must be destroyed when the job lets go of it: a worker or a
 * resource instance. Both follow the same record → create → confirm → destroy → confirm life
 * cycle, so one destruction path (with retries) serves both.
 */
import type { WorkerHandle } from '../factories/factory.js';
import type { Metadata } from '../wells/well.js';

export type HoldingKind = 'worker' | 'instance';

export interface Holding {
  kind: HoldingKind;
  id: number;
  jobId: number;
  /** Factory name (worker) or resource type (instance). */
  provider: string;
  handle: WorkerHandle | null;
  metadata: Metadata | null;
  destroying: boolean;
  destroyAttempts: number;
  nextDestroyAt: number;
}

export const holdingKey = (kind: HoldingKind, id: number): string => `${kind}:${id}`;

export function newHolding(kind: HoldingKind, id: number, jobId: number, provider: string): Holding {
  return {
    kind,
    id,
    jobId,
    provider,
    handle: null,
    metadata: null,
    destroying: false,
    destroyAttempts: 0,
    nextDestroyAt: 0,
  };
}
