/**
 * Property tests: random cohorts, queues and sequences of submissions, scheduling passes,
 * releases, requeues, withdrawals and policy changes. The test keeps its own ledger from the
 * decisions (it does not trust the scheduler's figures) and checks, after every step, that:
 * no queue exceeds nominal (+ borrowingLimit in a cohort); no cohort lends more than its members'
 * lendable parts; borrowers never use more than lenders leave unused of their lendable part;
 * recorded borrowing is exact; every preemption is allowed and makes the preemptor fit; a
 * preemptor's request is reserved while its victims stop, so that it still fits once they have
 * (whatever else is admitted meanwhile, the victims themselves included); once its last victim has
 * stopped it is admitted first in the next pass, and it never preempts a second time unless
 * something else changed (its queue was on hold when its turn came); and, within one queue,
 * project and priority, no workload is admitted while an earlier one asking for no more is still
 * pending (but in a Backfill queue, which passes over earlier jobs on purpose).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Scheduler, type Decision, type QueueModel, type Workload } from '../../src/scheduler/index.js';
import { queueModel, type Quantities, type QueueSpec } from './helpers.js';

const cpuIf = (v: number | undefined): Quantities => (v === undefined ? {} : { cpu: v });

const RESOURCES = ['cpu', 'jobs'] as const;
type Res = (typeof RESOURCES)[number];
type Strategy = QueueModel['queueingStrategy'];
type Within = QueueModel['preemption']['withinClusterQueue'];
type Reclaim = QueueModel['preemption']['reclaimWithinCohort'];
type Stop = QueueModel['stopPolicy'];

const queueArb = fc.record({
  cpu: fc.integer({ min: 0, max: 8 }),
  jobs: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
  cohort: fc.option(fc.constantFrom<string>('c1', 'c2'), { nil: undefined, freq: 4 }),
  borrow: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
  lend: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
  strategy: fc.constantFrom<Strategy>('StrictFIFO', 'BestEffortFIFO', 'Backfill'),
  within: fc.constantFrom<Within>('Never', 'LowerPriority', 'LowerPriority', 'LowerOrNewerEqualPriority'),
  reclaim: fc.constantFrom<Reclaim>('Never', 'LowerPriority', 'Any', 'Any'),
});

const opArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('enqueue' as const),
      queue: fc.nat(4),
      project: fc.constantFrom('x', 'y', 'z'),
      priority: fc.integer({ min: 0, max: 2 }),
      cpu: fc.integer({ min: 0, max: 4 }),
      millis: fc.boolean(),
      /** In steps (ms): what Backfill plans with; absent: none. */
      timeout: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('schedule' as const), max: fc.integer({ min: 1, max: 6 }) }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('finishEviction' as const),
      pick: fc.nat(),
      requeue: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('withdraw' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('policy' as const),
      queue: fc.nat(4),
      stop: fc.constantFrom<Stop>('None', 'None', 'Hold', 'HoldAndDrain'),
      strategy: fc.constantFrom<Strategy>('StrictFIFO', 'BestEffortFIFO', 'Backfill'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('weight' as const),
      project: fc.constantFrom('x', 'y'),
      weight: fc.integer({ min: 1, max: 3 }),
    }),
  },
);

interface Held {
  w: Workload;
  evicting: boolean;
  preemptor: number | null;
}

class Ledger {
  readonly pending = new Map<number, Workload>();
  readonly admitted = new Map<number, Held>();
  /** Preemptors whose victims are still being evicted: their request is reserved meanwhile. */
  readonly waiting = new Map<number, Set<number>>();
  /** Preemptors whose victims have all stopped, in that order: the next pass admits them first. */
  resumed: number[] = [];
  /** Pending workloads that have preempted; `excused`: and may do so again. */
  readonly preempted = new Set<number>();
  readonly excused = new Set<number>();

  constructor(readonly models: Map<string, QueueModel>) {}

  /** Held by admitted workloads and, with `reserved`, reserved for waiting preemptors. */
  usage(queue: string, exclude: Set<number> = new Set(), reserved = true): Record<Res, number> {
    const u = { cpu: 0, jobs: 0 };
    const count = (w: Workload): void => {
      if (w.queue !== queue || exclude.has(w.id)) return;
      for (const r of RESOURCES) u[r] += w.requests[r] ?? 0;
    };
    for (const h of this.admitted.values()) count(h.w);
    if (reserved) for (const id of this.waiting.keys()) count(this.pending.get(id) as Workload);
    return u;
  }

  members(cohort: string): QueueModel[] {
    return [...this.models.values()].filter((m) => m.cohort === cohort);
  }

  lend(m: QueueModel, r: Res): number {
    const n = m.nominal[r] ?? 0;
    return Math.min(m.lendingLimit[r] ?? n, n);
  }

  /** Room for one more workload of `m` in resource r, per QUEUEING.md. */
  room(m: QueueModel, r: Res, exclude: Set<number> = new Set()): number {
    const n = m.nominal[r] ?? 0;
    const u = this.usage(m.name, exclude)[r];
    if (m.cohort === null) return n - u;
    let pool = 0;
    let used = 0;
    for (const o of this.members(m.cohort)) {
      if (o.nominal[r] === undefined) continue;
      pool += this.lend(o, r);
      used += Math.max(0, this.usage(o.name, exclude)[r] - ((o.nominal[r] ?? 0) - this.lend(o, r)));
    }
    const priv = n - this.lend(m, r);
    const cap = m.borrowingLimit[r] === undefined ? Infinity : n + (m.borrowingLimit[r] ?? 0);
    return Math.min(cap - u, Math.max(0, priv - u) + Math.max(0, pool - used));
  }

  fits(w: Workload, exclude?: Set<number>): boolean {
    const m = this.models.get(w.queue);
    if (m === undefined) return false;
    return RESOURCES.every((r) => {
      const x = w.requests[r] ?? 0;
      return m.nominal[r] === undefined || x === 0 || x <= this.room(m, r, exclude);
    });
  }

  checkInvariants(s: Scheduler): void {
    for (const [id, victims] of this.waiting) {
      const w = this.pending.get(id) as Workload;
      assert.ok(this.fits(w, new Set([id, ...victims])), `${id} would no longer fit once its victims stop`);
    }
    for (const m of this.models.values()) {
      const u = this.usage(m.name, new Set(), false);
      for (const r of RESOURCES) {
        const n = m.nominal[r];
        if (n === undefined) continue;
        const cap = m.cohort === null ? n : n + (m.borrowingLimit[r] ?? Infinity);
        assert.ok(u[r] <= cap, `queue ${m.name} uses ${u[r]} ${r}, more than ${cap}`);
      }
      const figures = s.queueFigures(m.name);
      assert.equal(figures?.usage.cpu ?? 0, u.cpu, `queue ${m.name}: scheduler's cpu usage`);
      assert.equal(figures?.admitted, [...this.admitted.values()].filter((h) => h.w.queue === m.name).length);
    }
    for (const cohort of ['c1', 'c2']) {
      const members = this.members(cohort);
      for (const r of RESOURCES) {
        const named = members.filter((m) => m.nominal[r] !== undefined);
        let pool = 0;
        let used = 0;
        let borrowed = 0;
        let unusedLendable = 0;
        for (const m of named) {
          const n = m.nominal[r] ?? 0;
          const lend = this.lend(m, r);
          const u = this.usage(m.name, new Set(), false)[r];
          pool += lend;
          used += Math.max(0, u - (n - lend));
          borrowed += Math.max(0, u - n);
          unusedLendable += lend - Math.min(lend, Math.max(0, Math.min(u, n) - (n - lend)));
        }
        assert.ok(used <= pool, `cohort ${cohort} lends ${used} ${r} of a pool of ${pool}`);
        assert.ok(
          borrowed <= unusedLendable,
          `cohort ${cohort}: ${borrowed} ${r} borrowed, ${unusedLendable} lendable`,
        );
      }
    }
  }

  apply(d: Decision): void {
    if (d.kind === 'admit') {
      const w = this.pending.get(d.id);
      assert.ok(w !== undefined, `admitted ${d.id}, which is not pending`);
      assert.ok(this.fits(w), `admitted ${d.id}, which does not fit`);
      const m = this.models.get(w.queue) as QueueModel;
      assert.equal(m.stopPolicy, 'None', `admitted ${d.id} in a queue on hold`);
      const u = this.usage(w.queue, new Set(), false);
      const borrowed: Record<string, number> = {};
      for (const r of RESOURCES) {
        const n = m.nominal[r];
        const x = w.requests[r] ?? 0;
        if (n === undefined || x === 0) continue;
        const b = Math.max(0, u[r] + x - n) - Math.max(0, u[r] - n);
        if (b > 0) borrowed[r] = b;
      }
      assert.deepEqual(d.borrowed, borrowed, `borrowed by ${d.id}`);
      // Backfill passes over earlier jobs on purpose: test/simulate/swf.test.ts holds it to EASY.
      for (const [, other] of m.queueingStrategy === 'Backfill' ? [] : this.pending) {
        if (other.id === w.id || other.queue !== w.queue || other.project !== w.project) continue;
        if (other.priority !== w.priority || other.createdAt > w.createdAt) continue;
        if (other.createdAt === w.createdAt && other.id > w.id) continue;
        const noMore = RESOURCES.every((r) => (other.requests[r] ?? 0) <= (w.requests[r] ?? 0));
        assert.ok(
          !noMore,
          `admitted ${w.id} before ${other.id} (same queue, project, priority; earlier, no larger)`,
        );
      }
      this.pending.delete(d.id);
      this.preempted.delete(d.id);
      this.excused.delete(d.id);
      this.admitted.set(d.id, { w, evicting: false, preemptor: null });
    } else if (d.kind === 'preempt') {
      const w = this.pending.get(d.preemptor);
      assert.ok(w !== undefined, `preemptor ${d.preemptor} is not pending`);
      assert.ok(!this.waiting.has(d.preemptor), `${d.preemptor} preempted again while its victims stop`);
      assert.ok(
        !this.preempted.has(d.preemptor) || this.excused.has(d.preemptor),
        `${d.preemptor} preempted a second time, although nothing else changed`,
      );
      this.preempted.add(d.preemptor);
      this.excused.delete(d.preemptor);
      assert.ok(!this.fits(w), `${d.preemptor} preempted although it fits`);
      const m = this.models.get(w.queue) as QueueModel;
      for (const r of RESOURCES) {
        const x = w.requests[r] ?? 0;
        const n = m.nominal[r];
        if (n !== undefined && x > 0 && x > this.room(m, r))
          assert.ok(x <= n, `${d.preemptor} needs ${x} ${r} > nominal`);
      }
      assert.ok(d.victims.length > 0);
      for (const v of d.victims) {
        const h = this.admitted.get(v);
        assert.ok(h !== undefined && !h.evicting, `victim ${v} is not admitted or already evicting`);
        if (h.w.queue === w.queue) {
          const p = m.preemption.withinClusterQueue;
          const lower = h.w.priority < w.priority;
          const newer =
            h.w.priority === w.priority &&
            (h.w.createdAt > w.createdAt || (h.w.createdAt === w.createdAt && h.w.id > w.id));
          assert.ok(p === 'LowerPriority' ? lower : p === 'LowerOrNewerEqualPriority' && (lower || newer));
        } else {
          const other = this.models.get(h.w.queue);
          assert.ok(m.cohort !== null && other?.cohort === m.cohort, `victim ${v} outside the cohort`);
          const p = m.preemption.reclaimWithinCohort;
          assert.ok(
            p === 'Any' || (p === 'LowerPriority' && h.w.priority < w.priority),
            `victim ${v} by ${p}`,
          );
        }
      }
      assert.ok(this.fits(w, new Set(d.victims)), `${d.preemptor} would not fit without its victims`);
      for (const v of d.victims) {
        const h = this.admitted.get(v) as Held;
        h.evicting = true;
        h.preemptor = d.preemptor;
      }
      this.waiting.set(d.preemptor, new Set(d.victims));
    } else {
      const h = this.admitted.get(d.id);
      assert.ok(h !== undefined && !h.evicting, `drained ${d.id}, which is not admitted or already evicting`);
      assert.equal(this.models.get(h.w.queue)?.stopPolicy, 'HoldAndDrain');
      h.evicting = true;
    }
  }

  stopped(id: number): void {
    const h = this.admitted.get(id);
    this.admitted.delete(id);
    if (h?.preemptor === null || h === undefined) return;
    const set = this.waiting.get(h.preemptor);
    if (set === undefined || !set.delete(id) || set.size > 0) return;
    this.waiting.delete(h.preemptor);
    this.resumed.push(h.preemptor);
  }

  /** A pass with at most `max` decisions: the first ones admit the preemptors whose turn it is. */
  pass(decisions: Decision[], max: number): void {
    const due = this.resumed.filter((id) => this.pending.has(id));
    // One whose queue is on hold now waits like the rest of its queue, and may have to preempt again.
    const turn = due.filter(
      (id) => this.models.get(this.pending.get(id)?.queue ?? '')?.stopPolicy === 'None',
    );
    for (const id of due) if (!turn.includes(id)) this.excused.add(id);
    const k = Math.min(max, turn.length);
    assert.deepEqual(
      decisions.slice(0, k).map((d) => (d.kind === 'admit' ? d.id : `${d.kind}`)),
      turn.slice(0, k),
      'preemptors whose victims have stopped are admitted first',
    );
    this.resumed = turn.slice(k);
    for (const d of decisions) this.apply(d);
  }
}

type QueueGen = typeof queueArb extends fc.Arbitrary<infer T> ? T : never;
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

function run(queueSpecs: QueueGen[], ops: Op[]): void {
  const s = new Scheduler();
  const models = new Map<string, QueueModel>();
  const specs: QueueSpec[] = queueSpecs.map((q, i) => ({
    name: `q${i}`,
    nominal: { cpu: q.cpu, ...(q.jobs === undefined ? {} : { jobs: q.jobs }) },
    cohort: q.cohort,
    borrowingLimit: cpuIf(q.borrow),
    lendingLimit: cpuIf(q.lend === undefined ? undefined : Math.min(q.lend, q.cpu)),
    strategy: q.strategy,
    within: q.within,
    reclaim: q.reclaim,
  }));
  for (const spec of specs) {
    const m = queueModel(spec);
    models.set(m.name, m);
    s.upsertQueue(m);
  }
  const ledger = new Ledger(models);
  let id = 0;
  let now = 0;
  for (const op of ops) {
    now++;
    switch (op.kind) {
      case 'enqueue': {
        const queue = `q${op.queue % (specs.length + 1)}`; // sometimes a queue that does not exist
        const w: Workload = {
          id: ++id,
          queue,
          project: op.project,
          priority: op.priority,
          createdAt: now,
          requests: { jobs: 1, ...(op.cpu > 0 ? { cpu: op.cpu * 1000 - (op.millis ? 500 : 0) } : {}) },
          ...(op.timeout === undefined ? {} : { timeoutMs: op.timeout }),
        };
        ledger.pending.set(w.id, w);
        s.enqueue(w);
        break;
      }
      case 'schedule': {
        const decisions = s.schedule(now, op.max);
        assert.ok(decisions.length <= op.max);
        ledger.pass(decisions, op.max);
        break;
      }
      case 'release': {
        const running = [...ledger.admitted.values()].filter((h) => !h.evicting);
        const h = running[op.pick % Math.max(1, running.length)];
        if (h === undefined) break;
        ledger.stopped(h.w.id);
        s.release(h.w.id);
        break;
      }
      case 'finishEviction': {
        const evicting = [...ledger.admitted.values()].filter((h) => h.evicting);
        const h = evicting[op.pick % Math.max(1, evicting.length)];
        if (h === undefined) break;
        ledger.stopped(h.w.id);
        if (op.requeue) {
          ledger.pending.set(h.w.id, h.w);
          s.requeue(h.w.id);
        } else s.release(h.w.id);
        break;
      }
      case 'withdraw': {
        const ids = [...ledger.pending.keys()];
        const victim = ids[op.pick % Math.max(1, ids.length)];
        if (victim === undefined) break;
        ledger.pending.delete(victim);
        ledger.waiting.delete(victim);
        ledger.resumed = ledger.resumed.filter((r) => r !== victim);
        assert.equal(s.withdraw(victim), true);
        break;
      }
      case 'policy': {
        const spec = specs[op.queue % specs.length] as QueueSpec;
        spec.stop = op.stop;
        spec.strategy = op.strategy;
        const m = queueModel(spec);
        models.set(m.name, m);
        s.upsertQueue(m);
        break;
      }
      case 'weight':
        s.setProjectWeight(op.project, op.weight);
        break;
    }
    ledger.checkInvariants(s);
  }
  // Everything the ledger thinks is pending, the scheduler lists as pending, and vice versa.
  const listed = [...models.keys(), `q${specs.length}`].flatMap((q) => s.pendingIds(q, 0, 1e9));
  assert.deepEqual(
    listed.sort((a, b) => a - b),
    [...ledger.pending.keys()].sort((a, b) => a - b),
  );
  for (const pid of ledger.pending.keys()) assert.ok(s.explain(pid) !== undefined);
}

test('quota, cohort, lending and FCFS invariants hold at every step', () => {
  fc.assert(
    fc.property(
      fc.array(queueArb, { minLength: 2, maxLength: 4 }),
      fc.array(opArb, { minLength: 20, maxLength: 150 }),
      run,
    ),
    { numRuns: 300 },
  );
});

test('the same, with preemption everywhere, small quotas and many priorities', () => {
  const preempting = queueArb.chain((q) =>
    fc
      .record({
        within: fc.constantFrom<Within>('LowerPriority', 'LowerOrNewerEqualPriority'),
        reclaim: fc.constantFrom<Reclaim>('LowerPriority', 'Any'),
        cpu: fc.integer({ min: 2, max: 5 }),
        cohort: fc.constantFrom<string>('c1', 'c2'),
      })
      .map((p) => ({ ...q, ...p })),
  );
  const ops = fc.array(
    opArb.map((op) => (op.kind === 'enqueue' ? { ...op, priority: (op.priority * 7 + op.cpu) % 5 } : op)),
    { minLength: 30, maxLength: 150 },
  );
  fc.assert(fc.property(fc.array(preempting, { minLength: 2, maxLength: 4 }), ops, run), { numRuns: 300 });
});

test('BestEffortFIFO: after every pass nothing admissible is left behind, also after releases', () => {
  fc.assert(
    fc.property(
      fc.array(queueArb, { minLength: 1, maxLength: 4 }),
      fc.array(
        fc.record({
          queue: fc.nat(3),
          cpu: fc.integer({ min: 1, max: 4 }),
          priority: fc.integer({ min: 0, max: 2 }),
          project: fc.constantFrom('x', 'y'),
        }),
        { maxLength: 40 },
      ),
      fc.array(fc.array(fc.nat(), { maxLength: 4 }), { maxLength: 6 }),
      (queueSpecs, subs, releases) => {
        const s = new Scheduler();
        const models = new Map<string, QueueModel>();
        queueSpecs.forEach((q, i) => {
          const m = queueModel({
            name: `q${i}`,
            nominal: { cpu: q.cpu },
            cohort: q.cohort,
            borrowingLimit: cpuIf(q.borrow),
            lendingLimit: cpuIf(q.lend === undefined ? undefined : Math.min(q.lend, q.cpu)),
          });
          models.set(m.name, m);
          s.upsertQueue(m);
        });
        const ledger = new Ledger(models);
        subs.forEach((sub, i) => {
          const w: Workload = {
            id: i + 1,
            queue: `q${sub.queue % queueSpecs.length}`,
            project: sub.project,
            priority: sub.priority,
            createdAt: i,
            requests: { jobs: 1, cpu: sub.cpu * 1000 },
          };
          ledger.pending.set(w.id, w);
          s.enqueue(w);
        });
        const pass = (now: number): void => {
          for (const d of s.schedule(now)) ledger.apply(d);
          // Without preemption, whatever still fits would have been admitted: parked workloads
          // came back once quota was released in their queue or cohort.
          for (const w of ledger.pending.values())
            assert.ok(!ledger.fits(w), `${w.id} fits but was left pending`);
        };
        pass(1);
        releases.forEach((picks, i) => {
          for (const pick of picks) {
            const ids = [...ledger.admitted.keys()];
            const id = ids[pick % Math.max(1, ids.length)];
            if (id === undefined) continue;
            ledger.stopped(id);
            s.release(id);
          }
          pass(i + 2);
        });
      },
    ),
    { numRuns: 300 },
  );
});

test('deterministic: the same calls give the same decisions', () => {
  fc.assert(
    fc.property(
      fc.array(queueArb, { minLength: 1, maxLength: 4 }),
      fc.array(opArb, { minLength: 10, maxLength: 80 }),
      (queueSpecs, ops) => {
        const replay = (): string[] => {
          const s = new Scheduler();
          queueSpecs.forEach((q, i) =>
            s.upsertQueue(
              queueModel({ name: `q${i}`, nominal: { cpu: q.cpu }, cohort: q.cohort, within: q.within }),
            ),
          );
          const log: string[] = [];
          let admitted: number[] = [];
          ops.forEach((op, i) => {
            if (op.kind === 'enqueue') {
              s.enqueue({
                id: i,
                queue: `q${op.queue % queueSpecs.length}`,
                project: op.project,
                priority: op.priority,
                createdAt: i,
                requests: { jobs: 1, cpu: op.cpu * 1000 },
              });
            } else if (op.kind === 'release' && admitted.length > 0) {
              const id = admitted[op.pick % admitted.length] as number;
              admitted = admitted.filter((a) => a !== id);
              s.release(id);
            } else if (op.kind === 'schedule') {
              for (const d of s.schedule(i, op.max)) {
                log.push(JSON.stringify(d));
                if (d.kind === 'admit') admitted.push(d.id);
              }
            }
          });
          return log;
        };
        assert.deepEqual(replay(), replay());
      },
    ),
    { numRuns: 100 },
  );
});
