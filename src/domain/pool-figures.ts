import type { ClusterQueueView } from './cluster-queue.js';

/** A factory or a resource type as the API shows it: capacity, what is in use, who waits. */
export interface PoolFigures {
  name: string;
  kind: string;
  capacity: number;
  inUse: number;
  waiting: number;
  /** A factory's devices (docs/DEVICES.md), by kind: how many it has and how many are held. */
  devices?: { kind: string; total: number; inUse: number }[];
}

/** A resource type (`GET /resource-types`): its well's figures and the privilege it needs. */
export interface ResourceTypeView extends PoolFigures {
  privilege: string | null;
}

/** A target (`GET /targets`): the factory that makes its workers, with that factory's figures. */
export interface TargetView {
  name: string;
  factory: string;
  privilege: string | null;
  /** The target of jobs submitted without one (`defaultTarget`). */
  default: boolean;
  /** Pilot workers: one worker runs the target's jobs one after another. */
  reuse: boolean;
  /** The timeout of a job that gives none (`defaultTimeout`), in seconds. */
  defaultTimeoutSeconds: number | null;
  /** What a job that names no request of a resource is given of it (`defaultRequests`). */
  defaultRequests: Record<string, string>;
  /** The most a job may request of a resource, per worker (`maxRequests`). */
  maxRequests: Record<string, string>;
  /**
   * Who its jobs run as, in words: a uid of their own each, or the server's user (one tenant
   * only: jobs of different projects can reach each other); null when not known.
   */
  isolation: string | null;
  /** Its factory's devices, in words (`gpu: 2 (0, 1)`); null when it has none. */
  devices: string | null;
  /** The OCI image its jobs run in when they name none; null: none (docs/IMAGES.md). */
  image: string | null;
  /** The registries its jobs' images may come from; null: any. */
  registries: string[] | null;
  /** Why its jobs cannot run in images; null when they can. */
  imagesRefused: string | null;
  capacity: number;
  inUse: number;
  waiting: number;
}

/** The figures the dashboard shows live (the `figures` event of `GET /stream`). */
export interface Figures {
  clusterQueues: ClusterQueueView[];
  factories: PoolFigures[];
  resourceTypes: ResourceTypeView[];
}
