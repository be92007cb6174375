/**
 * `berth simulate --swf`: Standard Workload Format traces replayed on berth's scheduler. A tiny
 * trace worked out by hand, the figures, the CSV, and the property the Backfill strategy is built
 * to: on any trace, berth's Backfill starts every job when an independent EASY does (bench/easy.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { conservativeStarts } from '../../bench/conservative.js';
import { easyStarts, type EasyJob } from '../../bench/easy.js';
import type { QueueingStrategy } from '../../src/domain/cluster-queue.js';
import { parseSwf, replaySwf, swfCsv, swfSummary, type SwfJob } from '../../src/simulate/swf.js';

/** An SWF line: job, submit, wait, run, allocated, …, requested procs (8), requested time (9), user (12). */
const line = (
  id: number,
  submit: number,
  run: number,
  procs: number,
  time: number,
  allocated = -1,
  user = 1,
) => [id, submit, -1, run, allocated, -1, -1, procs, time, -1, 1, user, 1, -1, -1, -1, -1, -1].join(' ');

// A machine of 4: job 1 holds 3 until 100 s; 2 wants all 4; 3 fits now but would still run at
// 100 s; 4 ends at 60 s, so it goes ahead of 2 without delaying it.
const TRACE = [
  '; Version: 2.2',
  '; MaxProcs: 4',
  line(1, 0, 100, 3, 100),
  line(2, 10, 50, 4, 50),
  line(3, 10, 300, 1, 300),
  line(4, 10, 50, 1, 50),
  line(5, 20, 0, 1, 10), // run time 0: skipped
  line(6, 20, 10, 8, 10), // more than the machine: skipped
  line(7, 30, 5, -1, 10, 2), // no requested procs: its allocated 2
].join('\n');

const starts = (strategy: QueueingStrategy) =>
  Object.fromEntries(replaySwf(parseSwf(TRACE), { strategy }).runs.map((r) => [r.id, r.start]));

/** How far apart jobs come, how long they run, how far off their estimates are (s). */
interface Spread {
  gap: number;
  run: number;
  slack: [number, number];
  jobs: number;
}
/** Long traces of jobs a minute long at most, estimates mostly above. */
const WIDE: Spread = { gap: 8, run: 60, slack: [-20, 60], jobs: 60 };
/**
 * Short, crowded traces: jobs of a few seconds arriving close together, their estimates often
 * below their run times, so that jobs outrun them at the instants others arrive. A job held back
 * at one instant and not tried again at the next, once another had outrun its estimate, made
 * berth differ from EASY in none of 20,000 wide traces and in about one in 3,000 such (CI found
 * it once, with seed 1201699369). Hence their own property, with more runs: without the fix, its
 * 5,000 found it with 6 seeds of 10; test/scheduler/backfill.test.ts pins the case itself.
 */
const CROWDED: Spread = { gap: 3, run: 10, slack: [-8, 4], jobs: 20 };

/** A random trace on a machine of 1 to 8; with `firstKnown`, the first job has an estimate. */
const randomTrace = (firstKnown: boolean, spread: Spread = WIDE) =>
  fc
    .tuple(
      fc.integer({ min: 1, max: 8 }),
      fc.array(
        fc.record({
          gap: fc.integer({ min: 0, max: spread.gap }),
          run: fc.integer({ min: 1, max: spread.run }),
          procs: fc.integer({ min: 1, max: 8 }),
          // Estimates above or below the run time, some unknown (-1).
          slack: fc.integer({ min: spread.slack[0], max: spread.slack[1] }),
          known: fc.boolean(),
        }),
        { minLength: 1, maxLength: spread.jobs },
      ),
    )
    .map(([machine, js]) => {
      let submit = 0;
      const jobs: SwfJob[] = js.map((j, i) => ({
        id: i + 1,
        submit: (submit += j.gap),
        run: j.run,
        procs: Math.min(j.procs, machine),
        requestedTime: j.known || (firstKnown && i === 0) ? Math.max(1, j.run + j.slack) : -1,
        user: -1,
      }));
      return { machine, jobs };
    });

/** The jobs as the replay plans them: a job without a requested time with the trace's longest. */
function planned(jobs: SwfJob[]): EasyJob[] {
  const longest = Math.max(0, ...jobs.map((j) => j.requestedTime));
  return jobs.map((j) => ({ ...j, estimate: j.requestedTime > 0 ? j.requestedTime : longest || Infinity }));
}

/** Berth's Backfill starts every job of the trace when the reference EASY does. */
function startsAsEasy({ machine, jobs }: { machine: number; jobs: SwfJob[] }): void {
  const berth = replaySwf({ maxProcs: machine, jobs }, { strategy: 'Backfill' }).runs.map((r) => r.start);
  assert.deepEqual(berth, easyStarts(planned(jobs), machine));
}

describe('simulate --swf', () => {
  it('parses the header and the jobs, requested procs else allocated', () => {
    const t = parseSwf(TRACE);
    assert.equal(t.maxProcs, 4);
    assert.equal(t.jobs.length, 7);
    assert.deepEqual(t.jobs[6], { id: 7, submit: 30, run: 5, procs: 2, requestedTime: 10, user: 1 });
    assert.throws(() => parseSwf('1 2 3'), /line 1: expected 18 numeric fields/);
  });

  it('Backfill: the short job starts ahead of the wide one, the long one waits for it', () => {
    assert.deepEqual(starts('Backfill'), { 1: 0, 2: 100, 3: 150, 4: 10, 7: 150 });
    // BestEffortFIFO lets the long one in, which delays the wide one to 310 s.
    assert.deepEqual(starts('BestEffortFIFO'), { 1: 0, 2: 310, 3: 10, 4: 100, 7: 100 });
    assert.deepEqual(starts('StrictFIFO'), { 1: 0, 2: 100, 3: 150, 4: 150, 7: 150 });
  });

  it('Backfill with more reservations (conservative): the third job is not delayed by a long one behind it', () => {
    // 1 holds 3 of 4 until 100 s; 2 (3 procs) is reserved then, until 200 s; 3 wants all 4.
    // Under EASY 4 (500 s) takes the free processor at 3 s and 3 waits for it until 503 s; with
    // two reservations 3 is reserved at 200 s, so 4 waits and 5, done by 154 s, goes instead.
    const trace = parseSwf(
      [
        '; MaxProcs: 4',
        line(1, 0, 100, 3, 100),
        line(2, 1, 100, 3, 100),
        line(3, 2, 100, 4, 100),
        line(4, 3, 500, 1, 500),
        line(5, 4, 150, 1, 150),
      ].join('\n'),
    );
    const at = (reservations: number) =>
      Object.fromEntries(
        replaySwf(trace, { strategy: 'Backfill', reservations }).runs.map((r) => [r.id, r.start]),
      );
    assert.deepEqual(at(1), { 1: 0, 2: 100, 3: 503, 4: 3, 5: 200 });
    assert.deepEqual(at(2), { 1: 0, 2: 100, 3: 200, 4: 300, 5: 4 });
  });

  it('counts what it skips and sums up the run', () => {
    const r = replaySwf(parseSwf(TRACE), { strategy: 'Backfill' });
    assert.equal(r.summary.jobs, 5);
    assert.equal(r.summary.skipped, 2);
    assert.equal(r.summary.maxWait, 140);
    // Waits 0, 90, 140, 0, 120; the machine (4) busy 3·100 + 4·50 + 300 + 50 + 2·5 over 0–450 s.
    assert.equal(r.summary.avgWait, 350 / 5);
    assert.equal(r.summary.utilization, 860 / (4 * 450));
    assert.equal(
      swfCsv(r.runs).split('\n').slice(0, 3).join('\n'),
      'id,submit,start,end,procs\n1,0,0,100,3\n2,10,100,150,4',
    );
  });

  it('bounded slowdown counts a job shorter than 10 s as 10 s long, and never below 1', () => {
    const s = swfSummary(
      [
        { id: 1, submit: 0, start: 20, end: 21, procs: 1 }, // (20 + 1) / 10
        { id: 2, submit: 0, start: 0, end: 5, procs: 1 }, // 5 / 10 → 1
      ],
      1,
      0,
    );
    assert.equal(s.avgBoundedSlowdown, (2.1 + 1) / 2);
  });

  it('learned estimates: a job of a user whose jobs ran short is planned short, and backfilled', () => {
    // User 1's first job took 10 s of the 100 it asked; user 2's job holds 1 of 2 until 120 s at
    // the latest, so 3 (both processors) is reserved to start then; user 1's next job asks 100 s.
    const trace = parseSwf(
      [
        '; MaxProcs: 2',
        line(1, 0, 10, 1, 100, -1, 1),
        line(2, 20, 100, 1, 100, -1, 2),
        line(3, 30, 10, 2, 10, -1, 3),
        line(4, 40, 10, 1, 100, -1, 1),
      ].join('\n'),
    );
    const start = (estimates: 'requested' | 'learned') =>
      replaySwf(trace, { estimates }).runs.find((r) => r.id === 4)?.start;
    assert.equal(start('requested'), 130);
    assert.equal(start('learned'), 40);
  });

  it('--procs: a machine smaller than the trace says skips what no longer fits', () => {
    const r = replaySwf(parseSwf(TRACE), { procs: 3 });
    assert.equal(r.summary.skipped, 3);
    assert.throws(() => replaySwf(parseSwf(line(1, 0, 1, 1, 1))), /--procs N/);
  });

  it('Backfill starts every job when an independent EASY does, on random traces', () => {
    fc.assert(fc.property(randomTrace(false), startsAsEasy), { numRuns: 300 });
  });

  it('Backfill starts every job when an independent EASY does, on crowded traces where jobs outrun their estimates', () => {
    fc.assert(fc.property(randomTrace(false, CROWDED), startsAsEasy), { numRuns: 5000 });
  });

  it('Backfill with more reservations starts every job when an independent conservative backfilling does, on random traces', () => {
    // The first job has an estimate: jobs without are planned with the longest, never unplanned.
    fc.assert(
      fc.property(
        fc.oneof(randomTrace(true), randomTrace(true, CROWDED)),
        fc.constantFrom(2, 3, 100),
        ({ machine, jobs }, reservations) => {
          const berth = replaySwf(
            { maxProcs: machine, jobs },
            { strategy: 'Backfill', reservations },
          ).runs.map((r) => r.start);
          assert.deepEqual(berth, conservativeStarts(planned(jobs), machine, reservations));
        },
      ),
      { numRuns: 300 },
    );
  });
});
