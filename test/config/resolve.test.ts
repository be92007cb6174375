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
    assert.equal(overridden.rateLimit.jobRequestsPerSecond, 100, "--rate-limit leaves a job's token's");
  });

  it("is 100 per job's token by default; the file and then --job-rate-limit change it", () => {
    assert.equal(resolve({}).rateLimit.jobRequestsPerSecond, 100);
    const file = validateConfig({ rateLimit: { jobRequestsPerSecond: 20 } }, 'berth.yaml');
    assert.equal(resolveConfig(file, {}, 'berth.yaml').rateLimit.jobRequestsPerSecond, 20);
    assert.equal(
      resolveConfig(file, { jobRequestsPerSecond: 0 }, 'berth.yaml').rateLimit.jobRequestsPerSecond,
      0,
    );
  });

  it('names the bad key', () => {
    assert.throws(
      () => validateConfig({ rateLimit: { requestsPerSecond: -1 } }, 'berth.yaml'),
      /rateLimit\.requestsPerSecond/,
    );
  });
});

describe('local factories: who jobs run as', () => {
  const local = (extra: Record<string, unknown> = {}, capacity = 4) => ({
    kind: 'local' as const,
    capacity,
    ...extra,
  });

  it('gives each local factory a default range of its own, and the default pids limit', () => {
    const config = resolveConfig(
      { factories: { a: local(), b: local() }, targets: { a: { factory: 'a' } }, defaultTarget: 'a' },
      { dataDir: '/srv/berth' },
    );
    const [a, b] = [config.factories.a!, config.factories.b!];
    assert.ok(a.jobUids && b.jobUids);
    assert.notDeepEqual(a.jobUids, b.jobUids);
    assert.equal(a.pidsLimit, 4096);
  });

  it('refuses a range smaller than the capacity, overlapping ranges, and the settings on other kinds', () => {
    assert.throws(
      () => resolveConfig({ factories: { a: local({ runAs: { uids: '5000-5001' } }) } }, {}),
      /factories\.a\.runAs\.uids: has 2 uids, fewer than the factory's capacity \(4\)/,
    );
    assert.throws(
      () => resolveConfig({ factories: { a: local({ runAs: { uids: 'all' } }) } }, {}),
      /factories\.a\.runAs\.uids: "all" is not a range of uids/,
    );
    assert.throws(
      () =>
        resolveConfig(
          {
            factories: {
              a: local({ runAs: { uids: '5000-5999' } }),
              b: local({ runAs: { uids: '5500-6500' } }),
            },
          },
          {},
        ),
      /factories\.b\.runAs\.uids: 5500-6500 overlaps factory "a"'s uids \(5000-5999\)/,
    );
    // isolation: required asks for cgroups and namespaces too; either off beside it is refused.
    const whole = resolveConfig({ factories: { local: local({ isolation: 'required' }) } }, {}).factories
      .local;
    assert.deepEqual([whole?.cgroups, whole?.namespaces], ['required', 'required']);
    for (const key of ['cgroups', 'namespaces'])
      assert.throws(
        () => resolveConfig({ factories: { l: local({ isolation: 'required', [key]: 'off' }) } }, {}),
        new RegExp(`factories\\.l\\.${key}: off, but isolation: required asks for every protection`),
      );
    assert.throws(
      () => resolveConfig({ factories: { s: { kind: 'simulated', isolation: 'required' } } }, {}),
      /factories\.s\.isolation: is for a local or slurm factory only/,
    );
    assert.throws(
      () => resolveConfig({ factories: { l: local({ gres: { gpu: 'gpu' } }) } }, {}),
      /factories\.l\.gres: is for a slurm factory only/,
    );
    assert.throws(
      () => resolveConfig({ factories: { l: local({ devices: { cpu: { count: 2 } } }) } }, {}),
      /factories\.l\.devices\.cpu: cpu is counted by berth itself, not a device kind/,
    );
    // A slurm factory's nodes may be this machine: its uids are kept apart from a local one's too.
    assert.throws(
      () =>
        resolveConfig(
          {
            factories: {
              a: local({ runAs: { uids: '5000-5999' } }),
              s: { kind: 'slurm', capacity: 2, runAs: { uids: '5900-5999' } },
            },
            targets: { s: { factory: 's' } },
            defaultTarget: 's',
          },
          {},
        ),
      /factories\.s\.runAs\.uids: 5900-5999 overlaps factory "a"'s uids/,
    );
    const slurm = resolveConfig(
      {
        factories: { s: { kind: 'slurm', capacity: 2, runAs: { projects: { teamb: 'alice' } } } },
        targets: { s: { factory: 's' } },
        defaultTarget: 's',
      },
      {},
    ).factories.s!;
    assert.deepEqual(slurm.projectUsers, { teamb: 'alice' });
    assert.ok(slurm.jobUids && slurm.jobUids.last - slurm.jobUids.first + 1 === 10_000);
  });
});
