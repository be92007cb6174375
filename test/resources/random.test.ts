/**
 * Randomized: many jobs, random subsets of resource types, capacities 1–2, factory capacity 2–3,
 * gang jobs of up to the factory's capacity among them, random cancels and flaky exec creates.
 * Every job must finish (no deadlock, also with gangs that need every worker at once), no
 * capacity may ever be exceeded, and every instance must end destroyed. The exec scripts keep a
 * ledger outside berth (appended in real order), which is replayed to check capacity. The seed
 * is printed for reproduction.
 */
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir, sharedFile } from '../helpers/scratch.js';

const seed = Number(process.env.BERTH_SEED ?? Date.now() % 100_000);
function rng(s: number): () => number {
  return () => (s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}
const random = rng(seed);
const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;

const TYPES = ['a', 'b', 'c'];
const capacities = Object.fromEntries(TYPES.map((t) => [t, 1 + Math.floor(random() * 2)]));
const factoryCapacity = 2 + Math.floor(random() * 2);
const dir = scratchDir('berth-random-');
const ledger = join(dir, 'ledger');
/** What each rank of each job ran, appended by the ranks themselves. */
const ranks = join(dir, 'ranks');
let s: TestServer;

before(async () => {
  const script = (name: string, body: string) => {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  };
  script(
    'create.sh',
    [
      `echo "create $BERTH_RESOURCE_TYPE $BERTH_RESOURCE_ID" >> ${ledger}`,
      // Every fourth instance fails to be created (the well reports it; berth retries).
      'if [ $((BERTH_RESOURCE_ID % 4)) -eq 0 ]; then echo "flaky create" >&2; exit 1; fi',
      `echo '{"id": "'$BERTH_RESOURCE_ID'"}'`,
    ].join('\n'),
  );
  script('destroy.sh', `echo "destroy $BERTH_RESOURCE_TYPE $BERTH_RESOURCE_ID" >> ${ledger}`);
  writeFileSync(ledger, '');
  sharedFile(ranks);
  writeFileSync(
    join(dir, 'berth.yaml'),
    [
      'graceSeconds: 1',
      'factories:',
      `  local: { kind: local, capacity: ${factoryCapacity} }`,
      'resources:',
      ...TYPES.map(
        (t) =>
          `  ${t}: { kind: exec, capacity: ${capacities[t]}, create: ./create.sh, destroy: ./destroy.sh }`,
      ),
    ].join('\n'),
  );
  s = await startTestServer({ configFile: join(dir, 'berth.yaml') });
});
after(async () => s.close());

it(
  `finishes every job within every capacity and leaves nothing alive (seed ${seed})`,
  { timeout: 240_000 },
  async () => {
    const jobs: number[] = [];
    const gangs = new Map<number, number>();
    const cancels: Promise<unknown>[] = [];
    for (let i = 0; i < 30; i++) {
      const resources = TYPES.filter(() => random() < 0.5);
      const workers = pick([1, 1, 2, factoryCapacity]);
      const job = await submit(s.api, s.adminToken, 'default', {
        resources,
        workers,
        script: `sleep ${pick(['0', '0.1', '0.3'])}; echo "$BERTH_JOB_ID $BERTH_RANK $BERTH_WORLD_SIZE" >> ${ranks}`,
      });
      jobs.push(job.id);
      gangs.set(job.id, workers);
      if (random() < 0.25) {
        // Cancel once the job reaches a randomly chosen point of its life.
        const at = pick(['queued', 'admitted', 'running']);
        cancels.push(
          waitFor(
            `job ${job.id} to be ${at}`,
            async () => {
              const j = await getJob(s.api, s.adminToken, job.id);
              return j.state === at || ['succeeded', 'failed', 'cancelled'].includes(j.state);
            },
            60_000,
          ).then(() => call(s.api, s.adminToken, 'POST', `/jobs/${job.id}/cancel`)),
        );
      }
    }
    await Promise.all(cancels);
    const done = await Promise.all(jobs.map((id) => waitDone(s.api, s.adminToken, id, 120_000)));
    assert.ok(done.every((j) => j.cleanedUp));

    // Replay the ledger: live instances of a type never exceed its capacity.
    const live = new Map<string, Set<string>>(TYPES.map((t) => [t, new Set()]));
    const created = new Set<string>();
    for (const line of readFileSync(ledger, 'utf8').trim().split('\n')) {
      const [what, type, id] = line.split(' ') as [string, string, string];
      if (what === 'create') {
        live.get(type)!.add(id);
        created.add(`${type} ${id}`);
        assert.ok(live.get(type)!.size <= capacities[type]!, `capacity of ${type} exceeded at: ${line}`);
      } else {
        live.get(type)!.delete(id);
      }
    }
    assert.deepEqual(
      [...live.values()].map((l) => l.size),
      [0, 0, 0],
      'every created instance was destroyed',
    );
    const rows = (
      await call<{ id: number; jobId: number; type: string; state: string; error: string | null }[]>(
        s.api,
        s.adminToken,
        'GET',
        '/resource-instances',
      )
    ).body;
    // Every instance the well made is one berth recorded. A job cancelled while its instance was
    // being recorded lets the record go without asking the well to create it.
    const recorded = new Set(rows.map((r) => `${r.type} ${r.id}`));
    assert.deepEqual(
      [...created].filter((c) => !recorded.has(c)),
      [],
      'made by the well, unknown to berth',
    );
    for (const r of rows.filter((r) => !created.has(`${r.type} ${r.id}`))) {
      const job = done.find((j) => j.id === r.jobId);
      assert.equal(
        job?.state,
        'cancelled',
        `instance ${r.id} never made, yet its job ${r.jobId} was not cancelled`,
      );
    }
    assert.ok(
      rows.every((r) => r.state === 'destroyed'),
      JSON.stringify(rows.filter((r) => r.state !== 'destroyed')),
    );
    // Workers too: the factory's capacity held, and nothing is left.
    const factory = (await call<{ inUse: number }[]>(s.api, s.adminToken, 'GET', '/factories')).body[0]!;
    assert.equal(factory.inUse, 0);
    // A job that succeeded ran every one of its ranks, each told the gang's size.
    const ran = new Map<number, string[]>();
    for (const line of readFileSync(ranks, 'utf8').trim().split('\n').filter(Boolean)) {
      const [id, rank, size] = line.split(' ').map(Number) as [number, number, number];
      assert.equal(size, gangs.get(id), `job ${id}'s world size`);
      ran.set(id, [...(ran.get(id) ?? []), String(rank)]);
    }
    for (const j of done.filter((d) => d.state === 'succeeded')) {
      const n = gangs.get(j.id)!;
      assert.deepEqual(
        (ran.get(j.id) ?? []).sort(),
        Array.from({ length: n }, (_, r) => String(r)),
        `job ${j.id}'s ranks`,
      );
    }
    assert.ok(
      done.some((j) => j.state === 'succeeded' && gangs.get(j.id)! > 1),
      'at least one gang ran',
    );
  },
);
