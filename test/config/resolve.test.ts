/** resolveConfig: the defaults it fills, and the key it names for each mistake (pure). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveConfig, validateConfig } from '../../src/config/load.js';
import { failureAs, resolveAs } from './support.js';

const resolve = resolveAs('berth.yaml');
const failure = failureAs('berth.yaml');

describe('configuration: slurm factories', () => {
  const slurm = (extra: Record<string, unknown>) => ({
    factories: { hpc: { kind: 'slurm', partition: 'main', ...extra } },
    targets: { hpc: { factory: 'hpc' } },
  });

  it('reads timeLimit as a duration or seconds, one hour by default', () => {
    assert.equal(resolve(slurm({ timeLimit: '90m' })).factories.hpc?.timeLimitSeconds, 5400);
    assert.equal(resolve(slurm({ timeLimit: 120 })).factories.hpc?.timeLimitSeconds, 120);
    assert.equal(resolve(slurm({})).factories.hpc?.timeLimitSeconds, 3600);
  });

  it('names the key of a bad time limit, and of a slurm setting on another kind', () => {
    assert.match(
      failure(slurm({ timeLimit: 'soon' })),
      /factories\.hpc\.timeLimit: "soon" is not a duration/,
    );
    assert.match(
      failure({ factories: { local: { kind: 'local', partition: 'main' } } }),
      /factories\.local\.partition: is for a slurm factory only/,
    );
  });
});

describe('configuration: publicUrl', () => {
  it('is null by default, and kept without a trailing slash', () => {
    assert.equal(resolve({}).publicUrl, null);
    assert.equal(resolve({ publicUrl: 'http://head-node:7070/' }).publicUrl, 'http://head-node:7070');
    assert.equal(
      resolve({ publicUrl: 'https://berth.example.org/base' }).publicUrl,
      'https://berth.example.org/base',
    );
  });

  it('refuses what is not an http(s) URL, naming the key', () => {
    for (const bad of ['head-node:7070', 'ftp://x', 'http://x/?a=1', '']) {
      assert.match(
        failure({ publicUrl: bad }),
        /^berth\.yaml: publicUrl: .* must be an http:\/\/ or https:\/\/ URL/,
        bad,
      );
    }
  });
});

describe('configuration: the rate limit per token', () => {
  it('is 1000 requests per second by default; the file and then --rate-limit change it', () => {
    assert.equal(resolve({}).rateLimit.requestsPerSecond, 1000);
    assert.equal(resolve({ rateLimit: { requestsPerSecond: 50 } }).rateLimit.requestsPerSecond, 50);
    const overridden = resolveConfig(
      validateConfig({ rateLimit: { requestsPerSecond: 50 } }, 'berth.yaml'),
      { requestsPerSecond: 0 },
      'berth.yaml',
    );
    assert.equal(overridden.rateLimit.requestsPerSecond, 0);
  });

  it('names the bad key', () => {
    assert.throws(
      () => validateConfig({ rateLimit: { requestsPerSecond: -1 } }, 'berth.yaml'),
      /rateLimit\.requestsPerSecond/,
    );
  });
});
