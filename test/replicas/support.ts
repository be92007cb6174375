/** What the replica tests share: a config with a short lease, health, and stray processes. */
import type { Health } from '../../src/domain/health.js';
import { processesWithEnv } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { call } from '../helpers/server.js';

/**
 * Shorter than the default (15 s / 5 s) so that failovers take seconds, not half a minute. The
 * tests allow a new leader within the lease plus one renewal, and 2 s for a busy machine.
 */
export const LEASE_SECONDS = 6;
export const RENEW_SECONDS = 2;

export function replicaConfig(extra: string[] = [], capacity = 4): string {
  return [
    'graceSeconds: 1',
    'heartbeatSeconds: 5',
    `leaseSeconds: ${LEASE_SECONDS}`,
    `renewSeconds: ${RENEW_SECONDS}`,
    'factories:',
    `  local: { kind: local, capacity: ${capacity} }`,
    'targets:',
    '  local: { factory: local }',
    ...extra,
  ].join('\n');
}

export async function health(r: Pick<ServerProcess, 'api'>): Promise<Health> {
  const res = await call<Health>(r.api, undefined, 'GET', '/health');
  if (res.status !== 200) throw new Error(`health: ${res.status}`);
  return res.body;
}

/** Processes whose environment says they run in a worker directory under `dataDir`. */
export const processesUnder = (dataDir: string): number[] =>
  processesWithEnv((v) => v.startsWith(`BERTH_WORKDIR=${dataDir}/`));

export interface Submitter {
  /** Ends when all `count` jobs are submitted. */
  done: Promise<void>;
  /** How many have been sent (some perhaps not yet accepted). */
  sent(): number;
  /** Answers that were not an acceptance (a dead replica, a 503) and were sent again. */
  retries(): number;
}

/**
 * Submits `count` jobs, `inFlight` at a time, through whichever of `replicas` are alive (the list
 * may shrink meanwhile), as a careful client would: with an idempotency key per job, sending a
 * job again through the next replica when its answer is lost or a 5xx, so none is lost or doubled.
 */
export function submitThrough(
  replicas: Pick<ServerProcess, 'api' | 'token'>[],
  count: number,
  inFlight: number,
  body: (i: number) => Record<string, unknown>,
): Submitter {
  let next = 0;
  let retries = 0;
  const one = async (i: number): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      const via = replicas[(i + attempt) % replicas.length]!;
      const r = await call(via.api, via.token, 'POST', '/projects/default/jobs', {
        ...body(i),
        idempotencyKey: `job-${i}`,
      }).catch(() => undefined);
      if (r?.status === 201 || r?.status === 200) return;
      if (r && r.status < 500) throw new Error(`submit ${i}: ${r.status} ${r.text}`);
      retries++;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const done = Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) await one(next++);
    }),
  ).then(() => {});
  return { done, sent: () => next, retries: () => retries };
}
