/** The pure parts of retries: the budgets, the backoff with jitter, and the checks of a submission. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BadRequestError } from '../../src/domain/errors.js';
import {
  MAX_RETRY_DELAY_SECONDS,
  mayRetry,
  retryDelayMs,
  retryHead,
  retryingReason,
  retryPolicy,
  retrySpec,
} from '../../src/domain/retry.js';

describe('retryDelayMs', () => {
  it('doubles the backoff for each retry, capped, with half of it fixed and half random', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: MAX_RETRY_DELAY_SECONDS, noNaN: true }),
        fc.integer({ min: 1, max: 60 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (backoff, n, r) => {
          const full = Math.min(MAX_RETRY_DELAY_SECONDS, backoff * 2 ** (n - 1)) * 1000;
          const d = retryDelayMs(backoff, n, () => r);
          assert.ok(d >= Math.floor(full / 2) && d <= Math.ceil(full), `${d} outside [${full / 2}, ${full}]`);
          // Never sooner than a lower retry number with the same random draw.
          if (n > 1) assert.ok(d >= retryDelayMs(backoff, n - 1, () => r));
        },
      ),
    );
  });

  it('spreads jobs that failed together', () => {
    const draws = [0, 0.25, 0.5, 0.75, 0.999].map((r) => retryDelayMs(10, 1, () => r));
    assert.deepEqual(draws, [5000, 6250, 7500, 8750, 9995]);
  });
});

describe('budgets', () => {
  it("draws the job's own failures and the infrastructure's from separate budgets", () => {
    const p = retryPolicy({
      command: ['x'],
      env: {},
      timeoutSeconds: null,
      requests: {},
      resources: [],
      dependsOn: [],
      retries: 2,
    });
    assert.equal(mayRetry(p, { job: 1, infrastructure: 0 }, 'job'), true);
    assert.equal(mayRetry(p, { job: 2, infrastructure: 0 }, 'job'), false);
    assert.equal(mayRetry(p, { job: 0, infrastructure: 0 }, 'infrastructure'), false);
    assert.equal(p.backoffSeconds, 10);
  });
});

describe('retrySpec', () => {
  it('keeps only what was given, and nothing for zero retries', () => {
    assert.deepEqual(retrySpec({}), {});
    assert.deepEqual(retrySpec({ retries: 0, infraRetries: 0 }), {});
    assert.deepEqual(retrySpec({ retries: 3, retryBackoffSeconds: 0 }), {
      retries: 3,
      retryBackoffSeconds: 0,
    });
  });

  it('refuses counts and backoffs out of range, naming the field', () => {
    for (const [input, field] of [
      [{ retries: -1 }, 'retries'],
      [{ infraRetries: 101 }, 'infraRetries'],
      [{ retries: 1.5 }, 'retries'],
      [{ retryBackoffSeconds: MAX_RETRY_DELAY_SECONDS + 1 }, 'retryBackoffSeconds'],
      [{ retryBackoffSeconds: Number.NaN }, 'retryBackoffSeconds'],
    ] as const)
      assert.throws(
        () => retrySpec(input),
        (e: unknown) => e instanceof BadRequestError && e.message.startsWith(`${field}:`),
      );
  });
});

describe('reasons', () => {
  it('says when the job comes back, and a restored job finds its head again', () => {
    const head = "attempt 1 failed: exited with code 1; retry 1 of 3 for the job's own failures";
    const reason = retryingReason(head, 125_000);
    assert.equal(reason, `${head} in 2m5s`);
    assert.equal(retryHead(reason), head);
    assert.equal(retryingReason(head, 700), `${head} in 1s`);
  });
});
