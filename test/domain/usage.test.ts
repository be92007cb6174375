/** The pure parts of usage accounting: hourly pieces of an allocation, the period, the report. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BadRequestError } from '../../src/domain/errors.js';
import { OBJECT_MEMBERS } from '../../src/domain/names.js';
import {
  addUsage,
  dailyUsage,
  DAY_MS,
  HOUR_MS,
  hourlyUsage,
  isByteResource,
  noUsage,
  periodSpans,
  splitByHour,
  usagePeriod,
  usageReport,
  type Allocation,
  type AllocationOutcome,
} from '../../src/domain/usage.js';

const T0 = Date.parse('2026-11-24T10:00:00Z');
const MIN = 60_000;

const allocation = (over: Partial<Allocation> = {}): Allocation => ({
  jobId: 1,
  attempt: 1,
  project: 'ml',
  name: 'train',
  user: 'alice',
  queue: 'default',
  target: 'local',
  workerId: 3,
  workers: 1,
  requests: { cpu: '2', memory: '1Gi' },
  queuedAt: T0,
  admittedAt: T0 + 30 * MIN,
  startedAt: T0 + 31 * MIN,
  endedAt: T0 + 135 * MIN,
  outcome: 'succeeded',
  final: true,
  ...over,
});

describe('splitByHour', () => {
  it('splits 10:30–12:15 into 30, 60 and 15 minutes', () => {
    assert.deepEqual(splitByHour(T0 + 30 * MIN, T0 + 135 * MIN), [
      { hour: T0, ms: 30 * MIN },
      { hour: T0 + HOUR_MS, ms: 60 * MIN },
      { hour: T0 + 2 * HOUR_MS, ms: 15 * MIN },
    ]);
    assert.deepEqual(splitByHour(T0, T0 + HOUR_MS), [{ hour: T0, ms: HOUR_MS }]);
    assert.deepEqual(splitByHour(T0 + 5, T0 + 5), []);
    assert.deepEqual(splitByHour(T0 + 5, T0), []);
  });

  it('covers the span exactly, one piece per hour it overlaps, each inside its hour', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4e12 }),
        fc.integer({ min: 0, max: 30 * 24 * HOUR_MS }),
        (from, length) => {
          const pieces = splitByHour(from, from + length);
          assert.equal(
            pieces.reduce((sum, p) => sum + p.ms, 0),
            length,
          );
          for (const [i, p] of pieces.entries()) {
            assert.equal(p.hour % HOUR_MS, 0);
            assert.ok(p.ms > 0 && p.ms <= HOUR_MS);
            if (i > 0) assert.equal(p.hour, pieces[i - 1]!.hour + HOUR_MS);
          }
          if (length > 0) {
            assert.equal(pieces[0]!.hour, Math.floor(from / HOUR_MS) * HOUR_MS);
            assert.equal(pieces.at(-1)!.hour, Math.floor((from + length - 1) / HOUR_MS) * HOUR_MS);
          }
        },
      ),
    );
  });
});

describe('hourlyUsage', () => {
  it('spreads held time and resource·seconds over the hours; counts and wait go to the hour it ended', () => {
    const pieces = hourlyUsage(allocation(), { cpu: 2000, memory: 2 ** 30, jobs: 1 });
    assert.deepEqual(
      pieces.map((p) => [p.hour - T0, p.heldMs / MIN, p.resources.cpu, p.resources.memory]),
      [
        [0, 30, 2000 * 1800, 2 ** 30 * 1800],
        [HOUR_MS, 60, 2000 * 3600, 2 ** 30 * 3600],
        [2 * HOUR_MS, 15, 2000 * 900, 2 ** 30 * 900],
      ],
    );
    assert.ok(
      pieces.every((p) => !('jobs' in p.resources)),
      'jobs is no resource here',
    );
    const [first, , last] = pieces;
    assert.deepEqual(
      [first!.allocations, first!.succeeded, first!.waitCount],
      [0, 0, 0],
      'nothing but time in the earlier hours',
    );
    assert.deepEqual(
      [last!.allocations, last!.succeeded, last!.waitCount, last!.waitMsSum, last!.waitMsMax],
      [1, 1, 1, 30 * MIN, 30 * MIN],
    );
  });

  it('gives an allocation never admitted one piece: its outcome, no time, no wait', () => {
    const pieces = hourlyUsage(
      allocation({ admittedAt: null, startedAt: null, outcome: 'cancelled', endedAt: T0 + 5 * MIN }),
      { cpu: 2000 },
    );
    assert.deepEqual(pieces, [{ ...noUsage(), hour: T0, cancelled: 1 }]);
  });

  it('adds up to the allocation whatever its times, requests and outcome', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4e12 }),
        fc.integer({ min: 0, max: 10 * HOUR_MS }),
        fc.option(fc.integer({ min: 0, max: 3 * 24 * HOUR_MS }), { nil: null }),
        fc.dictionary(fc.constantFrom('cpu', 'memory', 'gpu', 'jobs'), fc.nat({ max: 2 ** 40 })),
        fc.constantFrom<AllocationOutcome>('succeeded', 'failed', 'cancelled', 'requeued', 'retried'),
        (queuedAt, wait, held, amounts, outcome) => {
          const admittedAt = held === null ? null : queuedAt + wait;
          const endedAt = (admittedAt ?? queuedAt) + (held ?? wait);
          const a = allocation({ queuedAt, admittedAt, endedAt, outcome });
          const pieces = hourlyUsage(a, amounts);
          const sum = noUsage();
          for (const p of pieces) addUsage(sum, p);
          assert.equal(sum.heldMs, held ?? 0);
          assert.equal(sum[outcome], 1);
          assert.equal(sum.succeeded + sum.failed + sum.cancelled + sum.requeued + sum.retried, 1);
          assert.equal(sum.allocations, held === null ? 0 : 1);
          assert.equal(sum.waitMsSum, held === null ? 0 : wait);
          for (const [name, amount] of Object.entries(amounts)) {
            if (name === 'jobs' || amount === 0 || !held) continue;
            const expected = (amount * held) / 1000;
            assert.ok(Math.abs((sum.resources[name] ?? 0) - expected) <= expected * 1e-9, name);
          }
          assert.equal(pieces.at(-1)!.hour, Math.floor(endedAt / HOUR_MS) * HOUR_MS);
          assert.equal(new Set(pieces.map((p) => p.hour)).size, pieces.length, 'each hour once');
        },
      ),
    );
  });
});

describe('rollups keyed by names from outside', () => {
  it('sum every resource as a number, whatever it is named: a member of every object (hasOwnProperty, __proto__, …) included', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.oneof(fc.constantFrom(...OBJECT_MEMBERS), fc.constantFrom('cpu', 'memory')), {
          minLength: 1,
        }),
        fc.integer({ min: 1, max: 3 * DAY_MS }),
        fc.nat({ max: 2 ** 20 }),
        (names, held, amount) => {
          const amounts = Object.fromEntries(names.map((n) => [n, amount + 1]));
          const a = allocation({ admittedAt: T0, endedAt: T0 + held });
          const hours = hourlyUsage(a, amounts);
          const sum = noUsage();
          for (const d of dailyUsage(hours)) addUsage(sum, d);
          assert.deepEqual(Object.keys(sum.resources).sort(), [...names].sort());
          for (const n of names) {
            const v = sum.resources[n];
            assert.equal(typeof v, 'number', `${n}: ${String(v)}`);
            assert.ok(Math.abs(v! - ((amount + 1) * held) / 1000) <= 1e-6 * v!, `${n}: ${v}`);
          }
        },
      ),
    );
  });
});

describe('daily rollups', () => {
  it("sum a day's hours exactly, one piece per UTC day", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4e12 }),
        fc.integer({ min: 0, max: 5 * DAY_MS }),
        fc.integer({ min: 0, max: 3 * HOUR_MS }),
        (admittedAt, held, wait) => {
          const a = allocation({ queuedAt: admittedAt - wait, admittedAt, endedAt: admittedAt + held });
          const hours = hourlyUsage(a, { cpu: 1500 });
          const days = dailyUsage(hours);
          assert.equal(new Set(days.map((d) => d.hour)).size, days.length);
          for (const d of days) {
            assert.equal(d.hour % DAY_MS, 0);
            const sum = noUsage();
            for (const h of hours.filter((x) => x.hour >= d.hour && x.hour < d.hour + DAY_MS))
              addUsage(sum, h);
            assert.deepEqual({ ...d, hour: 0 }, { ...sum, hour: 0 });
          }
        },
      ),
    );
  });

  it('answer the whole days of a period, the hours at its ends from the hourly ones', () => {
    const day = Date.parse('2026-11-01T00:00:00Z');
    assert.deepEqual(periodSpans({ since: day + 5 * HOUR_MS, until: day + 3 * DAY_MS + 2 * HOUR_MS }), {
      days: [{ since: day + DAY_MS, until: day + 3 * DAY_MS }],
      hours: [
        { since: day + 5 * HOUR_MS, until: day + DAY_MS },
        { since: day + 3 * DAY_MS, until: day + 3 * DAY_MS + 2 * HOUR_MS },
      ],
    });
    assert.deepEqual(periodSpans({ since: day, until: day + 2 * DAY_MS }), {
      days: [{ since: day, until: day + 2 * DAY_MS }],
      hours: [],
    });
    const within = { since: day + HOUR_MS, until: day + 20 * HOUR_MS };
    assert.deepEqual(periodSpans(within), { days: [], hours: [within] });
    const across = { since: day + 20 * HOUR_MS, until: day + DAY_MS + 2 * HOUR_MS };
    assert.deepEqual(periodSpans(across), { days: [], hours: [across] });
  });

  it('cover every hour of a period exactly once', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e6 }), fc.integer({ min: 1, max: 24 * 40 }), (start, length) => {
        const p = { since: start * HOUR_MS, until: (start + length) * HOUR_MS };
        const { days, hours } = periodSpans(p);
        const covered = [...days, ...hours].sort((a, b) => a.since - b.since);
        assert.equal(covered[0]!.since, p.since);
        assert.equal(covered.at(-1)!.until, p.until);
        for (let i = 1; i < covered.length; i++) assert.equal(covered[i]!.since, covered[i - 1]!.until);
        for (const d of days) assert.ok(d.since % DAY_MS === 0 && d.until % DAY_MS === 0);
      }),
    );
  });
});

describe('usagePeriod', () => {
  const now = Date.parse('2026-11-24T14:20:00Z');

  it('widens to whole hours: since down, until up; 30 days back to now by default', () => {
    const iso = (p: { since: number; until: number }) => [
      new Date(p.since).toISOString(),
      new Date(p.until).toISOString(),
    ];
    assert.deepEqual(iso(usagePeriod(undefined, undefined, now)), [
      '2026-10-25T14:00:00.000Z',
      '2026-11-24T15:00:00.000Z',
    ]);
    assert.deepEqual(iso(usagePeriod('2026-11-01T10:59:59Z', '2026-11-02T00:00:00Z', now)), [
      '2026-11-01T10:00:00.000Z',
      '2026-11-02T00:00:00.000Z',
    ]);
    assert.deepEqual(iso(usagePeriod('12h', '1h', now)), [
      '2026-11-24T02:00:00.000Z',
      '2026-11-24T14:00:00.000Z',
    ]);
    assert.deepEqual(iso(usagePeriod('2026-11-24T14:05:00Z', '2026-11-24T14:10:00Z', now)), [
      '2026-11-24T14:00:00.000Z',
      '2026-11-24T15:00:00.000Z',
    ]);
  });

  it('refuses what is not a time, and a period that ends before it starts', () => {
    for (const bad of ['soon', 'yesterday', '7x', '2026-13-45'])
      assert.throws(
        () => usagePeriod(bad, undefined, now),
        (e: unknown) =>
          e instanceof BadRequestError &&
          e.message.startsWith(`since: "${bad}" is not a time: write an ISO 8601 time`),
      );
    assert.throws(() => usagePeriod(undefined, 'later', now), /until: "later" is not a time/);
    assert.throws(() => usagePeriod('1h', '2h', now), /since \(.*\) must be before until/);
    assert.throws(() => usagePeriod('2026-11-24T14:00:00Z', '2026-11-24T14:00:00Z', now), /must be before/);
  });
});

describe('usageReport', () => {
  it('converts to core·hours and byte·hours, sorts rows by key, and totals them', () => {
    const hour = { since: T0, until: T0 + HOUR_MS };
    const r = usageReport(hour, 'user', [
      {
        key: 'zoe',
        ...noUsage(),
        allocations: 2,
        failed: 1,
        retried: 1,
        waitMsSum: 3000,
        waitCount: 2,
        waitMsMax: 2500,
        heldMs: HOUR_MS / 2,
        resources: { cpu: 1500 * 3600, memory: 2 ** 30 * 1800 },
      },
      {
        key: 'al',
        ...noUsage(),
        allocations: 1,
        succeeded: 1,
        waitMsSum: 7200,
        waitCount: 1,
        waitMsMax: 7200,
        heldMs: HOUR_MS,
        resources: { gpu: 2 * 3600 },
      },
    ]);
    assert.equal(r.since, '2026-11-24T10:00:00.000Z');
    assert.equal(r.until, '2026-11-24T11:00:00.000Z');
    assert.deepEqual(r.resources, ['cpu', 'gpu', 'memory']);
    assert.deepEqual(
      r.rows.map((x) => x.key),
      ['al', 'zoe'],
    );
    assert.deepEqual(r.rows[1], {
      key: 'zoe',
      jobs: { succeeded: 0, failed: 1, cancelled: 0 },
      allocations: 2,
      requeued: 0,
      retried: 1,
      waitSeconds: { mean: 1.5, max: 2.5 },
      allocationHours: 0.5,
      resourceHours: { cpu: 1.5, gpu: 0, memory: 2 ** 30 / 2 },
    });
    assert.deepEqual(r.totals, {
      key: '',
      jobs: { succeeded: 1, failed: 1, cancelled: 0 },
      allocations: 3,
      requeued: 0,
      retried: 1,
      waitSeconds: { mean: 10.2 / 3, max: 7.2 },
      allocationHours: 1.5,
      resourceHours: { cpu: 1.5, gpu: 2, memory: 2 ** 30 / 2 },
    });
    const empty = usageReport(hour, 'project', []);
    assert.deepEqual([empty.rows, empty.resources, empty.totals.waitSeconds], [[], [], { mean: 0, max: 0 }]);
  });

  it('knows which resources count bytes', () => {
    for (const name of ['memory', 'ephemeral-storage', 'gpu-memory', 'hugepages-2Mi'])
      assert.ok(isByteResource(name));
    for (const name of ['cpu', 'gpu', 'licence', 'memoryless']) assert.ok(!isByteResource(name), name);
  });
});
