/**
 * A submission made into a spec (service/jobs/job-spec.ts), pure, from tables: a target's
 * defaults apply only to what the job did not say, and its timeline note says which applied.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildSpec, withTargetDefaults, type TargetDefaults } from '../../src/service/jobs/job-spec.js';

describe("a target's defaults on a submission", () => {
  it('fill what the job left out, keep what it gave, and say which', () => {
    const defaults: TargetDefaults = {
      defaultTimeoutSeconds: 600,
      defaultRequests: { memory: '1Gi', cpu: '1' },
    };
    for (const [input, timeout, requests, note] of [
      [
        {},
        600,
        { memory: '1Gi', cpu: '1' },
        "; timeout 10m, target t's defaultTimeout; requests memory=1Gi, cpu=1, target t's defaultRequests",
      ],
      [
        { timeoutSeconds: 5 },
        5,
        { memory: '1Gi', cpu: '1' },
        "; requests memory=1Gi, cpu=1, target t's defaultRequests",
      ],
      [
        { requests: { memory: '2Gi' } },
        600,
        { memory: '2Gi', cpu: '1' },
        "; timeout 10m, target t's defaultTimeout; requests cpu=1, target t's defaultRequests",
      ],
      [
        { timeoutSeconds: 5, requests: { memory: '64Mi', cpu: '500m' } },
        5,
        { memory: '64Mi', cpu: '500m' },
        '',
      ],
    ] as const) {
      const got = withTargetDefaults(buildSpec({ command: ['true'], ...input }), 't', defaults);
      assert.deepEqual(
        [got.spec.timeoutSeconds, got.spec.requests, got.note],
        [timeout, requests, note],
        JSON.stringify(input),
      );
    }
  });

  it('change nothing where the target has none', () => {
    const spec = buildSpec({ command: ['true'], requests: { cpu: 2 } });
    for (const defaults of [undefined, {}])
      assert.deepEqual(withTargetDefaults(spec, 't', defaults), { spec, note: '' });
  });
});
