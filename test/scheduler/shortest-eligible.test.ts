/**
 * The SJBF search of Backfill with learned estimates (lane-tree.ts `shortestEligible`) against a
 * plain scan of the lane in queue order, on random lanes and reservations.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  firstEligible,
  insert,
  offerable,
  shortestEligible,
  TreapRandom,
  type Eligibility,
} from '../../src/scheduler/lane-tree.js';
import { compareKeys } from '../../src/scheduler/ordering.js';
import { WorkloadNode } from '../../src/scheduler/workload-node.js';

const node = fc.record({
  priority: fc.integer({ min: 0, max: 2 }),
  createdAt: fc.integer({ min: 0, max: 50 }),
  cpu: fc.integer({ min: 1, max: 6 }),
  timeout: fc.integer({ min: 1, max: 60 }),
  predicted: fc.option(fc.integer({ min: 1, max: 60 }), { nil: null }),
  parked: fc.boolean(),
});

test('shortestEligible: the eligible workload predicted shortest at the first one’s priority, earliest among equals', () => {
  fc.assert(
    fc.property(
      fc.array(node, { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 0, max: 6 }),
      fc.integer({ min: 0, max: 60 }),
      fc.integer({ min: 0, max: 6 }),
      fc.integer({ min: 0, max: 60 }),
      fc.integer({ min: 0, max: 60 }),
      (specs, room, within, left, guardWithin, agedBefore) => {
        const random = new TreapRandom();
        let root: WorkloadNode | null = null;
        const nodes = specs.map((s, i) => {
          const n = new WorkloadNode(
            {
              id: i + 1,
              queue: 'q',
              project: 'p',
              priority: s.priority,
              createdAt: s.createdAt,
              requests: {},
              timeoutMs: s.timeout,
              expectedMs: s.predicted,
            },
            [s.cpu],
            random.next(),
          );
          n.parkedAt = s.parked ? 1 : 0;
          return n;
        });
        for (const n of nodes) root = insert(root, n);
        const inOrder = [...nodes].sort(compareKeys);
        const e: Eligibility = {
          epoch: 1,
          idx: [0],
          room: [room],
          reach: null,
          window: {
            head: inOrder[0] as WorkloadNode,
            gates: [
              { within, left: [left], byPrediction: true },
              { within: guardWithin, left: [left], byPrediction: false },
            ],
            shortestFirst: true,
            agedBefore,
          },
        };
        const first = firstEligible(root, e);
        if (first === null) return;
        const eligible = (n: WorkloadNode) => n.parkedAt < e.epoch && offerable(n, e);
        let want = first;
        if (first !== e.window?.head && first.createdAt >= agedBefore)
          for (const n of inOrder)
            if (compareKeys(n, first) > 0 && n.priority === first.priority && eligible(n))
              if (n.predictedMs < want.predictedMs) want = n;
        assert.equal(shortestEligible(root, e, first).id, want.id);
      },
    ),
    { numRuns: 500 },
  );
});
