/** What a job waiting for its image's pull is told (images/pull-reason.ts, pure), from a table. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pullReason } from '../../src/images/pull-reason.js';
import type { PullProgress } from '../../src/images/image-cache.js';

describe("a pull's progress as a job's reason", () => {
  it('says how much of how much, then the unpacking', () => {
    const name = '127.0.0.1:5000/team/app:1';
    for (const [p, reason] of [
      [{ phase: 'pulling', bytes: 0, total: 800e6 }, `pulling image ${name}: 0.0 of 800 MB`],
      [{ phase: 'pulling', bytes: 120e6, total: 800e6 }, `pulling image ${name}: 120 of 800 MB`],
      [{ phase: 'pulling', bytes: 2.5e6, total: 6.3e6 }, `pulling image ${name}: 2.5 of 6.3 MB`],
      // The layout's own files past what the manifest lists: never more than all.
      [{ phase: 'pulling', bytes: 801e6, total: 800e6 }, `pulling image ${name}: 800 of 800 MB`],
      [{ phase: 'pulling', bytes: 42e6 }, `pulling image ${name}: 42 MB so far`],
      [{ phase: 'unpacking', bytes: 801e6, total: 800e6 }, `unpacking image ${name} (800 MB)`],
      [{ phase: 'unpacking', bytes: 3e6 }, `unpacking image ${name} (3.0 MB)`],
    ] as [PullProgress, string][])
      assert.equal(pullReason(name, p), reason, JSON.stringify(p));
  });
});
