/**
 * Wells make and destroy instances of a managed resource type (a scratch database, a licence, a
 * scoped token), the way factories make workers. The controller records every instance
 * (`creating`) before it asks the well, confirms it (`ready`) with the metadata the well returns,
 * and keeps the record until the well confirms destruction. Acquisition order, capacity and
 * waiters are the controller's business: a well is asked to create only when it has room.
 */
import type { Metadata } from '../domain/resource-instance.js';

export type { Metadata };

/** What a well knows about the instance it is asked to make or destroy. */
export interface InstanceRequest {
  /** The instance's id in berth's store: stable, unique; names derived from it survive a crash. */
  instanceId: number;
  jobId: number;
  project: string;
  /** The resource type (its name in berth.yaml). */
  type: string;
}

export class WellError extends Error {
  constructor(
    message: string,
    /** Whether trying again may succeed (a busy server) or not (bad configuration). */
    readonly retryable = true,
  ) {
    super(message);
    this.name = 'WellError';
  }
}

export interface Well {
  readonly type: string;
  readonly kind: string;
  /** Instances alive at once. */
  readonly capacity: number;
  /** Makes an instance and returns its metadata. Throws WellError on failure. */
  create(req: InstanceRequest): Promise<Metadata>;
  /**
   * Destroys an instance. `metadata` is null when berth never learnt it (a crash between asking
   * and confirming): the well must then destroy whatever it may have made for `instanceId`.
   * Must succeed for an instance that is already gone. Throws WellError on failure (retried).
   */
  destroy(req: InstanceRequest, metadata: Metadata | null): Promise<void>;
  close(): Promise<void>;
}
