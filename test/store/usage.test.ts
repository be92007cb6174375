/**
 * The usage ledger and its rollups in the suite's store, written as the controller writes them
 * (a unit of the group commit: on PostgreSQL, behind): random allocations over several days give,
 * for random periods, groupings and project filters, exactly the sums worked out here from their
 * hourly pieces — whole days read from the daily rollups, the ends from the hourly ones; and a
 * second write of one allocation fails its unit and leaves the rollups as they were.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describe, it } from 'node:test';
import {
  addUsage,
  DAY_MS,
  HOUR_MS,
  hourlyUsage,
  noUsage,
  type Allocation,
  type AllocationOutcome,
  type UsageCounts,
  type UsageGrouping,
} from '../../src/domain/usage.js';
import { GroupCommit } from '../../src/store/group-commit.js';
import { listAllocations, recentRuns, recordAllocation, sumUsage } from '../../src/store/queries/usage.js';
import { storeOf } from '../helpers/db.js';
import { useTestServer } from '../helpers/server.js';

const server = useTestServer();
const T0 = Date.parse('2026-11-01T00:00:00Z');
const OUTCOMES: AllocationOutcome[] = ['succeeded', 'failed', 'cancelled', 'requeued', 'retried'];

interface Recorded {
  a: Allocation;
  amounts: Record<string, number>;
}

/** What the rollups must answer, from the allocations' hourly pieces. */
function expected(
  recorded: Recorded[],
  since: number,
  until: number,
  by: UsageGrouping,
  projects?: string[],
) {
  const out = new Map<string, UsageCounts>();
  for (const { a, amounts } of recorded) {
    if (projects && !projects.includes(a.project)) continue;
    const key = by === 'project' ? a.project : by === 'user' ? a.user : a.queue;
    for (const h of hourlyUsage(a, amounts)) {
      if (h.hour < since || h.hour >= until) continue;
      let sums = out.get(key);
      if (!sums) out.set(key, (sums = noUsage()));
      addUsage(sums, h);
    }
  }
  return out;
}

function assertClose(actual: number, wanted: number, what: string): void {
  assert.ok(
    Math.abs(actual - wanted) <= Math.abs(wanted) * 1e-9 + 1e-6,
    `${what}: ${actual}, expected ${wanted}`,
  );
}

describe('the usage rollups', () => {
  const recorded: Recorded[] = [];

  it('answer every period, grouping and project filter as the allocations add up', async () => {
    const store = storeOf(server());
    const commits = new GroupCommit(store);
    const allocations = fc.sample(
      fc.record({
        project: fc.constantFrom('p1', 'p2', 'p3'),
        user: fc.constantFrom('ann', 'ben'),
        queue: fc.constantFrom('q1', 'q2'),
        queuedAt: fc.integer({ min: T0, max: T0 + 6 * DAY_MS }),
        wait: fc.integer({ min: 0, max: HOUR_MS }),
        held: fc.option(fc.integer({ min: 0, max: 2 * DAY_MS }), { nil: null, freq: 5 }),
        outcome: fc.constantFrom(...OUTCOMES),
        cpu: fc.integer({ min: 0, max: 64_000 }),
        memory: fc.integer({ min: 0, max: 2 ** 40 }),
        workers: fc.integer({ min: 1, max: 4 }),
      }),
      { numRuns: 150, seed: 16 },
    );
    // Written together, as one turn's units share a commit.
    await Promise.all(
      allocations.map((x, i) => {
        const admittedAt = x.held === null ? null : x.queuedAt + x.wait;
        const a: Allocation = {
          jobId: i + 1,
          attempt: 1,
          project: x.project,
          name: 'job',
          user: x.user,
          queue: x.queue,
          target: 'local',
          workerId: null,
          workers: x.workers,
          requests: { cpu: `${x.cpu}m` },
          queuedAt: x.queuedAt,
          admittedAt,
          startedAt: admittedAt,
          endedAt: (admittedAt ?? x.queuedAt) + (x.held ?? x.wait),
          outcome: x.outcome,
          final: x.outcome !== 'requeued' && x.outcome !== 'retried',
        };
        const amounts = { cpu: x.cpu * x.workers, memory: x.memory * x.workers, jobs: 1 };
        recorded.push({ a, amounts });
        return commits.run((tx) => recordAllocation(tx, a, amounts));
      }),
    );
    assert.equal((await listAllocations(store.db)).length, allocations.length);

    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: -24, max: 24 * 9 }),
        fc.integer({ min: 1, max: 24 * 9 }),
        fc.constantFrom<UsageGrouping>('project', 'user', 'queue'),
        fc.option(fc.subarray(['p1', 'p2', 'p3', 'gone']), { nil: undefined }),
        async (from, hours, by, projects) => {
          const since = T0 + from * HOUR_MS;
          const until = since + hours * HOUR_MS;
          const got = await sumUsage(store.db, { since, until, by, projects });
          const want = expected(recorded, since, until, by, projects);
          assert.deepEqual(got.map((s) => s.key).sort(), [...want.keys()].sort());
          for (const s of got) {
            const { resources, ...counts } = want.get(s.key)!;
            // Every count exactly; resource·seconds (sums of doubles) within rounding.
            for (const [k, v] of Object.entries(counts))
              assert.equal(s[k as keyof typeof counts], v, `${s.key} ${k}`);
            assert.deepEqual(Object.keys(s.resources).sort(), Object.keys(resources).sort());
            for (const [name, v] of Object.entries(resources)) assertClose(s.resources[name]!, v, name);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('give back the runs that ended on their own, for start-time estimates after a restart', async () => {
    const db = storeOf(server()).db;
    const ran = recorded
      .map(({ a }) => a)
      .filter((a) => ['succeeded', 'failed', 'retried'].includes(a.outcome) && a.startedAt !== null)
      .map((a) => ({
        project: a.project,
        name: a.name,
        target: a.target,
        queue: a.queue,
        ms: a.endedAt - a.startedAt!,
      }));
    const key = (r: (typeof ran)[number]) => JSON.stringify(r);
    assert.ok(ran.length > 10);
    assert.deepEqual((await recentRuns(db, 100_000)).map(key).sort(), ran.map(key).sort());
    const last = await recentRuns(db, 10);
    assert.equal(last.length, 10);
    for (const r of last) assert.ok(ran.some((x) => key(x) === key(r)));
  });

  it('refuse a second write of one allocation, leaving the rollups as they were', async () => {
    const store = storeOf(server());
    const commits = new GroupCommit(store);
    const { a, amounts } = recorded[0]!;
    const period = { since: T0 - DAY_MS, until: T0 + 10 * DAY_MS, by: 'project' as const };
    const before = await sumUsage(store.db, period);
    const other: Allocation = { ...a, jobId: 10_000 };
    const results = await Promise.allSettled([
      commits.run((tx) => recordAllocation(tx, a, amounts)),
      commits.run((tx) => recordAllocation(tx, other, amounts)),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'fulfilled'],
    );
    assert.match(String((results[0] as PromiseRejectedResult).reason), /unique|duplicate/i);
    const after = await sumUsage(store.db, period);
    // Only the other one was added.
    const want = expected(
      [...recorded, { a: other, amounts: amounts }],
      period.since,
      period.until,
      'project',
    );
    const row = after.find((s) => s.key === a.project)!;
    assert.equal(row.allocations, want.get(a.project)!.allocations);
    assert.equal(
      row.allocations,
      before.find((s) => s.key === a.project)!.allocations + (a.admittedAt === null ? 0 : 1),
    );
  });
});
