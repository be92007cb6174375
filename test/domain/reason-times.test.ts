/**
 * Times in reasons for a person (issue #45, domain/reason-times.ts): each kind of reason the
 * server writes, made by the code that writes it, rendered as the CLI and the dashboard render it
 * — in the reader's zone, relative where near — and the instants given beside it as data.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { retryingReason } from '../../src/domain/retry.js';
import { instantsIn, personTime, timesForPerson } from '../../src/domain/reason-times.js';
import { Scheduler } from '../../src/scheduler/index.js';
import { admittedWorkload, queueModel, workload } from '../scheduler/helpers.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
/** 2026-12-01 19:16:43 UTC: the issue's own afternoon. */
const NOW = Date.parse('2026-12-01T19:16:43.000Z');

describe('personTime', () => {
  const cases: [string, number, string, string][] = [
    ['soon, today', NOW + 9 * MIN + 54_000, 'UTC', '19:26 (in 9m54s)'],
    ['in the reader’s zone (+05:30)', NOW + 9 * MIN + 54_000, 'Asia/Kolkata', '00:56 (in 9m54s)'],
    ['an hour and a bit', NOW + HOUR + 5 * MIN, 'UTC', '20:21 (in 1h5m)'],
    ['past, today', NOW - 3 * HOUR - 20 * MIN, 'UTC', '15:56 (3h20m ago)'],
    ['tomorrow, within a day: the date and the span', NOW + 6 * HOUR, 'UTC', 'Dec 2 01:16 (in 6h)'],
    ['far off: the date alone', NOW + 8 * 24 * HOUR, 'UTC', 'Dec 9 19:16'],
    ['long ago: the date alone', NOW - 30 * 24 * HOUR, 'UTC', 'Nov 1 19:16'],
    ['this second', NOW + 400, 'UTC', '19:16 (now)'],
    ['the same day a year on: the year', NOW + 365 * 24 * HOUR, 'UTC', 'Dec 1 2027 19:16'],
  ];
  for (const [what, at, timeZone, expected] of cases)
    it(`${what}: ${expected}`, () => assert.equal(personTime(at, NOW, { timeZone }), expected));
  it('to the second, for a job’s own times: 19:16:40 (3s ago)', () =>
    assert.equal(personTime(NOW - 3000, NOW, { timeZone: 'UTC', seconds: true }), '19:16:40 (3s ago)'));
  it('without the span, for a column of times', () =>
    assert.equal(
      personTime(NOW - 3000, NOW, { timeZone: 'UTC', seconds: true, relative: false }),
      '19:16:40',
    ));
});

/** Reasons of every kind, as the scheduler and the controller write them. */
function reasonsOfEveryKind(): [kind: string, reason: string][] {
  const s = new Scheduler();
  const now = NOW - 20 * MIN;
  s.upsertQueue(queueModel({ name: 'bf', nominal: { cpu: 5 }, strategy: 'Backfill', estimates: 'learned' }));
  s.upsertQueue(queueModel({ name: 'fifo', nominal: { cpu: 1 } }));
  // Admitted 20 minutes ago for 30: its 3 cpu free in 10 minutes by its timeout, in 2 predicted.
  s.restoreAdmitted(
    admittedWorkload({
      id: 1,
      queue: 'bf',
      requests: { cpu: 3 },
      timeout: 1800,
      expected: 1320,
      admittedAt: now,
    }),
  );
  s.enqueue(workload({ id: 2, queue: 'bf', requests: { cpu: 5 }, timeout: 600 }));
  // Predicted short, but by its 3 h timeout it could hold its cpu long past job 2's start.
  s.enqueue(workload({ id: 3, queue: 'bf', requests: { cpu: 1 }, timeout: 10_800, expected: 10 }));
  s.enqueue(workload({ id: 4, queue: 'fifo', requests: { cpu: 1 } }));
  s.enqueue(workload({ id: 5, queue: 'fifo', requests: { cpu: 1 } }));
  s.schedule(NOW);
  const reason = (id: number) => s.explain(id)?.reason ?? assert.fail(`job ${id} explained`);
  return [
    ['reserved (backfill)', reason(2)],
    ['waiting for a reservation, held by its timeout (two instants)', reason(3)],
    ['waiting for quota', reason(5)],
    ['retrying after its backoff', retryingReason('failed: exited with code 1', 30_000)],
    ['running', 'running on worker 7'],
  ];
}

describe('every kind of reason, for a person', () => {
  const reasons = reasonsOfEveryKind();
  it('covers reasons with and without times', () => {
    assert.ok(reasons.filter(([, r]) => instantsIn(r).length > 0).length >= 2, JSON.stringify(reasons));
  });
  for (const [kind, reason] of reasons)
    it(`${kind}: no ISO instant is left, each is said in the zone and relative; the rest as written`, () => {
      const instants = instantsIn(reason);
      const shown = timesForPerson(reason, NOW, { timeZone: 'Asia/Kolkata' });
      assert.doesNotMatch(shown, /\d{4}-\d\d-\d\dT/, shown);
      for (const iso of instants)
        assert.ok(shown.includes(personTime(Date.parse(iso), NOW, { timeZone: 'Asia/Kolkata' })), shown);
      // What is not a time stays word for word.
      const words = (text: string, times: string[]) => times.reduce((t, x) => t.replace(x, '·'), text);
      assert.equal(
        words(
          shown,
          instants.map((iso) => personTime(Date.parse(iso), NOW, { timeZone: 'Asia/Kolkata' })),
        ),
        words(reason, instants),
      );
    });

  it('says a reservation as the issue asked: "reserved to start at 19:26 (in 9m54s): …"', () => {
    const [, reserved] = reasons[0]!;
    const [iso] = instantsIn(reserved);
    assert.ok(iso, reserved);
    const at = Date.parse(iso);
    const clock = iso.slice(11, 16); // in UTC, read off the ISO text itself
    assert.match(
      timesForPerson(reserved, at - 9 * MIN - 54_000, { timeZone: 'UTC' }),
      new RegExp(`^reserved to start at ${clock} \\(in 9m54s\\): cpu 5 of queue bf, `),
    );
  });

  it('leaves what only looks like an instant, and text without one, as it is', () => {
    for (const text of ['exited with code 3', 'tag 2026-13-45T99:99:99Z is no time', 'at 2026-12-01 19:26'])
      assert.equal(timesForPerson(text, NOW), text);
    assert.deepEqual(instantsIn('tag 2026-13-45T99:99:99Z is no time'), []);
  });
});
