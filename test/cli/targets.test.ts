/**
 * `berth targets` and `berth resources` against a real server: where jobs can run and what
 * managed resources there are, with their live figures, as a table and as JSON.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TargetView } from '../../src/domain/pool-figures.js';
import { getJob } from '../helpers/jobs.js';
import { waitFor } from '../helpers/wait.js';
import { ok, parseJson, row, rows, useCliServer } from './cli.js';

const CONFIG = [
  'graceSeconds: 1',
  'defaultTarget: local',
  'factories:',
  '  local: { kind: local, capacity: 2 }',
  '  sim: { kind: simulated, capacity: 50 }',
  'targets:',
  '  local: { factory: local }',
  '  capped: { factory: local, defaultTimeout: 90m }',
  '  gpu: { factory: sim, privilege: target.gpu }',
  '  small: { factory: sim, defaultRequests: { memory: 1Gi }, maxRequests: { memory: 8Gi, cpu: 4 } }',
  'resources:',
  '  licence: { kind: semaphore, capacity: 2 }',
].join('\n');

const ctx = useCliServer(undefined, { config: CONFIG });

describe('berth targets', () => {
  it('lists each target with its factory, figures, pilots, default timeout and privilege', async () => {
    const out = ok(await ctx.admin(['targets']));
    assert.deepEqual(rows(out)[0], [
      'NAME',
      'FACTORY',
      'CAPACITY',
      'IN USE',
      'WAITING',
      'PILOTS',
      'DEFAULT TIMEOUT',
      'PRIVILEGE',
    ]);
    assert.deepEqual(row(out, 'NAME', 'capped'), {
      NAME: 'capped',
      FACTORY: 'local',
      CAPACITY: '2',
      'IN USE': '0',
      WAITING: '0',
      PILOTS: '-',
      'DEFAULT TIMEOUT': '1h30m',
      PRIVILEGE: '-',
    });
    assert.equal(row(out, 'NAME', 'gpu').PRIVILEGE, 'target.gpu');
    assert.equal(row(out, 'NAME', 'gpu').CAPACITY, '50');
    assert.equal(row(out, 'NAME', 'local')['DEFAULT TIMEOUT'], '-');
    assert.match(out, /^jobs submitted without --target run on local$/m);
    // A target's bounds on a job's requests: a line of its own; targets without any have none.
    assert.match(
      out,
      /^target small: default requests memory=1Gi cpu=4; at most memory=8Gi cpu=4 per worker$/m,
    );
    assert.doesNotMatch(out, /^target (local|capped|gpu):/m);
  });

  it("counts a running job's worker against every target of its factory; -o json has the fields", async () => {
    const id = Number(
      /^submitted job (\d+)/.exec(
        ok(await ctx.admin(['submit', '--target', 'capped', '--', 'sleep', '60'])),
      )?.[1],
    );
    await waitFor('the job to run', async () => {
      const job = await getJob(ctx.server.api, ctx.server.adminToken, id);
      return job.state === 'running';
    });
    const out = ok(await ctx.admin(['targets']));
    assert.deepEqual(
      ['local', 'capped', 'gpu'].map((t) => row(out, 'NAME', t)['IN USE']),
      ['1', '1', '0'],
    );
    const json = parseJson<TargetView[]>(await ctx.admin(['targets', '-o', 'json']));
    const capped = json.find((t) => t.name === 'capped');
    // Who its jobs run as, and whether they may run in images (namespaces: bubblewrap), depend on
    // the machine: checked apart.
    const { isolation, imagesRefused, ...rest } = capped ?? { isolation: null, imagesRefused: null };
    assert.ok(imagesRefused === null || /namespaces/.test(imagesRefused), String(imagesRefused));
    assert.deepEqual(rest, {
      name: 'capped',
      factory: 'local',
      privilege: null,
      default: false,
      reuse: false,
      defaultTimeoutSeconds: 5400,
      defaultRequests: {},
      image: null,
      registries: null,
      maxRequests: {},
      devices: null,
      capacity: 2,
      inUse: 1,
      waiting: 0,
    });
    assert.match(isolation ?? '', /^each job runs as a uid of its own \(\d+-\d+\); |one tenant only/);
    assert.match(out, /^factory local: (each job runs as a uid of its own|jobs run as the server's user)/m);
    assert.equal(json.find((t) => t.name === 'local')?.default, true);
    ok(await ctx.admin(['cancel', String(id)]));
  });
});

describe('berth resources', () => {
  it('lists each resource type with its kind, capacity and use', async () => {
    const out = ok(await ctx.admin(['resources']));
    assert.deepEqual(row(out, 'NAME', 'licence'), {
      NAME: 'licence',
      KIND: 'semaphore',
      CAPACITY: '2',
      'IN USE': '0',
      WAITING: '0',
      PRIVILEGE: '-',
    });
  });
});
