/**
 * forEachInParallel (store/parallel.ts), which the retention sweep's file removals go through:
 * never more than its limit under way, every item once, and a failure rethrown only once the
 * calls under way have ended.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { forEachInParallel } from '../../src/store/parallel.js';

describe('forEachInParallel', () => {
  it('keeps at most its limit under way and does every item once', async () => {
    let underWay = 0;
    let most = 0;
    const done: number[] = [];
    await forEachInParallel([...Array(100).keys()], 8, async (i) => {
      most = Math.max(most, ++underWay);
      await turn();
      underWay--;
      done.push(i);
    });
    assert.equal(most, 8);
    assert.deepEqual(
      done.sort((a, b) => a - b),
      [...Array(100).keys()],
    );
  });

  it('rethrows the first failure after the calls under way have ended, starting no more', async () => {
    let underWay = 0;
    let started = 0;
    await assert.rejects(
      forEachInParallel([...Array(100).keys()], 4, async (i) => {
        started++;
        underWay++;
        await turn();
        underWay--;
        if (i === 5) throw new Error('five');
      }),
      /five/,
    );
    assert.equal(underWay, 0);
    assert.ok(started < 20, `${started} started`);
  });
});
