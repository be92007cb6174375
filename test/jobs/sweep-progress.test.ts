/**
 * What a long retention sweep tells the admin (service/upkeep/sweep-progress.ts), on a clock the
 * test moves: nothing for a quick sweep, a line of progress every minute with what is left and
 * how long it should take at the pace so far, and what it removed at its end or when a stop cut
 * it short.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeDuration, SweepProgress } from '../../src/service/upkeep/sweep-progress.js';

const MINUTE = 60_000;

/** A sweep's progress on a clock the test moves; `last` is where the walk will end. */
function progress(last: number | null) {
  let now = 0;
  const lines: string[] = [];
  let lastAsked = 0;
  const p = new SweepProgress({
    say: (line) => lines.push(line),
    everyMs: MINUTE,
    clock: () => now,
    last: () => {
      lastAsked++;
      return Promise.resolve(last);
    },
  });
  return { p, lines, advance: (ms: number) => (now += ms), asked: () => lastAsked };
}

describe('the retention sweep says how far it has come', () => {
  it('durations for a person', () => {
    const table: [number, string][] = [
      [0, '0 s'],
      [42_400, '42 s'],
      [59_600, '1 min'],
      [MINUTE, '1 min'],
      [3 * MINUTE + 38_000, '3 min 38 s'],
      [60 * MINUTE, '1 h'],
      [65 * MINUTE + 20_000, '1 h 5 min'],
    ];
    for (const [ms, text] of table) assert.equal(describeDuration(ms), text, `${ms} ms`);
  });

  it('a quick sweep says nothing, and does not look for where its walk ends', async () => {
    const { p, lines, advance, asked } = progress(5000);
    for (let id = 100; id <= 1000; id += 100) {
      advance(1000);
      await p.walked(100, id - 99, id);
    }
    p.ended({ jobs: 1000, audit: 3, ledger: 0 }, false);
    assert.deepEqual(lines, []);
    assert.equal(asked(), 0);
  });

  it('a long one says so every minute, with what is left at its pace so far, then what it removed', async () => {
    const { p, lines, advance, asked } = progress(1_000_000);
    // The walk starts at job 400,001 (earlier sweeps removed those before), 2,000 ids a second,
    // and removes every other job.
    let reached = 400_000;
    const firstId = reached + 1;
    for (let s = 1; s <= 150; s++) {
      advance(1000);
      reached += 2000;
      await p.walked(1000, s === 1 ? firstId : reached - 1999, reached);
    }
    assert.equal(lines.length, 2, lines.join('\n'));
    assert.equal(asked(), 1, 'where the walk ends is looked for once');
    const left = (at: number) => (1_000_000 - at).toLocaleString('en');
    const minutes = (at: number) => describeDuration(((1_000_000 - at) / 2000) * 1000);
    assert.equal(
      lines[0],
      `retention: removed 60,000 ended jobs in 1 min, up to job 520,000; about ${left(520_000)} ` +
        `more to look at, about ${minutes(520_000)} at this pace`,
    );
    assert.match(
      lines[1]!,
      /^retention: removed 120,000 ended jobs in 2 min, up to job 640,000; about 360,000 more/,
    );
    p.ended({ jobs: 150_000, audit: 12, ledger: 0 }, false);
    assert.equal(
      lines[2],
      'retention: the sweep removed 150,000 ended jobs, 12 audit rows and 0 ledger rows in 2 min 30 s',
    );
  });

  it('past where the walk was to end (a job created late), it says only how far it has come', async () => {
    const { p, lines, advance } = progress(100);
    advance(MINUTE);
    await p.walked(10, 1, 200);
    assert.deepEqual(lines, ['retention: removed 10 ended jobs in 1 min, up to job 200']);
  });

  it('a sweep a stop cut short says what it removed and that the next one goes on', async () => {
    const quiet = progress(1000);
    quiet.p.ended({ jobs: 0, audit: 0, ledger: 0 }, true);
    assert.deepEqual(quiet.lines, [], 'nothing removed, nothing to say');

    // Jobs kept forever, audit rows removed: no walk of jobs to name.
    const audit = progress(null);
    audit.p.ended({ jobs: 0, audit: 7, ledger: 0 }, true);
    assert.deepEqual(audit.lines, [
      'retention: stopped with the server after removing 0 ended jobs, 7 audit rows and 0 ledger ' +
        'rows in 0 s; the next sweep removes the rest',
    ]);

    const cut = progress(1000);
    cut.advance(5000);
    await cut.p.walked(40, 1, 50);
    cut.p.ended({ jobs: 40, audit: 0, ledger: 0 }, true);
    assert.deepEqual(cut.lines, [
      'retention: stopped with the server after removing 40 ended jobs, 0 audit rows and 0 ledger ' +
        'rows in 5 s, up to job 50; the next sweep removes the rest',
    ]);
  });
});
