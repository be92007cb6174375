/**
 * What `berth run -it` says while its job waits (cli/commands/run.ts's waitingLine), pure: its
 * place in its queue as a person says it, the estimated start as a local time and how far off,
 * and the scheduler's reason.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Job } from '../../src/cli/api-types.js';
import { waitingLine } from '../../src/cli/commands/run.js';

const NOW = Date.parse('2026-12-02T14:00:00Z');
const job = (o: Partial<Job>): Job =>
  ({
    id: 12,
    state: 'queued',
    clusterQueue: 'gpu',
    position: null,
    estimatedStartAt: null,
    reason: 'waiting for quota: gpu 1 of 1 used',
    ...o,
  }) as Job;

describe('the line berth run -it shows while its job waits', () => {
  const clock = (iso: string) =>
    new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', hour12: false });
  const cases: [string, Partial<Job>, string][] = [
    [
      'first in its queue',
      { position: 1 },
      'job 12 waiting: 1st in queue gpu — waiting for quota: gpu 1 of 1 used',
    ],
    ['second', { position: 2 }, 'job 12 waiting: 2nd in queue gpu — waiting for quota: gpu 1 of 1 used'],
    ['third', { position: 3 }, 'job 12 waiting: 3rd in queue gpu — waiting for quota: gpu 1 of 1 used'],
    [
      'eleventh to thirteenth are th',
      { position: 12 },
      'job 12 waiting: 12th in queue gpu — waiting for quota: gpu 1 of 1 used',
    ],
    [
      'twenty-first',
      { position: 21 },
      'job 12 waiting: 21st in queue gpu — waiting for quota: gpu 1 of 1 used',
    ],
    ['no position', {}, 'job 12 waiting: in queue gpu — waiting for quota: gpu 1 of 1 used'],
    [
      'an estimate ahead: local time and how far',
      { position: 3, estimatedStartAt: '2026-12-02T14:05:30Z' },
      `job 12 waiting: 3rd in queue gpu, estimated start ${clock('2026-12-02T14:05:30Z')} (in 5m30s) — waiting for quota: gpu 1 of 1 used`,
    ],
    [
      'an estimate already past',
      { position: 1, estimatedStartAt: '2026-12-02T13:59:00Z' },
      'job 12 waiting: 1st in queue gpu, estimated start now — waiting for quota: gpu 1 of 1 used',
    ],
    [
      'admitted, getting its worker',
      { state: 'admitted', reason: 'worker 4 being created' },
      'job 12 starting: worker 4 being created',
    ],
  ];
  for (const [name, o, line] of cases) it(name, () => assert.equal(waitingLine(job(o), NOW), line));
});
