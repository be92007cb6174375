/**
 * Resource instances: what a well makes for one job (a scratch database, a token, a licence
 * slot). They share the worker's life cycle: recorded, made, confirmed, destroyed, confirmed.
 */
import { WORKER_STATES } from './worker.js';

/** creating → ready → destroying → destroyed, or failed. */
export const INSTANCE_STATES = WORKER_STATES;
export type InstanceState = (typeof INSTANCE_STATES)[number];

/** Per-instance data for the job: connection URLs, user names, passwords. Only the job holding
 * the instance can read it (GET /job/self); it never appears in other endpoints, logs or events. */
export type Metadata = Record<string, string>;

/** An instance as the store keeps it. `metadata` is null until the well confirmed it. */
export interface InstanceRecord {
  id: number;
  jobId: number;
  type: string;
  state: InstanceState;
  metadata: Metadata | null;
}

/** What anyone allowed to see the instance sees (`GET /resource-instances`): never its metadata. */
export interface InstanceView {
  id: number;
  jobId: number;
  type: string;
  state: InstanceState;
  error: string | null;
  createdAt: string;
  updatedAt: string;
}
