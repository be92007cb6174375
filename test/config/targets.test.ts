/** The targets section: pilot settings, a target's defaultTimeout, and what the server warns of (pure). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { targetWarnings } from '../../src/config/targets.js';
import { failureAs, resolveAs } from './support.js';

const resolve = resolveAs('berth.yaml');
const failure = failureAs('berth.yaml');

/** A config with a slurm factory `hpc` (timeLimit 4h), a local one, and the targets given. */
const withTargets = (targets: Record<string, unknown>) => ({
  factories: {
    hpc: { kind: 'slurm', partition: 'main', timeLimit: '4h' },
    local: { kind: 'local' },
  },
  targets,
});

describe('configuration: a target’s defaultTimeout', () => {
  it('is read as a duration or seconds, on any target; unset, there is none', () => {
    const c = resolve(
      withTargets({
        short: { factory: 'hpc', reuse: true, defaultTimeout: '10m' },
        plain: { factory: 'local', defaultTimeout: 90 },
        open: { factory: 'local' },
      }),
    );
    assert.equal(c.targets.short?.defaultTimeoutSeconds, 600);
    assert.equal(c.targets.plain?.defaultTimeoutSeconds, 90);
    assert.equal(c.targets.open?.defaultTimeoutSeconds, undefined);
    assert.equal('defaultTimeout' in c.targets.short, false, 'only the seconds are kept');
  });

  it('names the key of one that is not a duration, zero, or longer than the factory lets a worker run', () => {
    assert.match(
      failure(withTargets({ t: { factory: 'local', defaultTimeout: 'soon' } })),
      /^berth\.yaml: targets\.t\.defaultTimeout: "soon" is not a duration/,
    );
    assert.match(
      failure(withTargets({ t: { factory: 'local', defaultTimeout: '0s' } })),
      /^berth\.yaml: targets\.t\.defaultTimeout: "0s" must be at least 1s/,
    );
    assert.match(
      failure(withTargets({ t: { factory: 'local', defaultTimeout: 0 } })),
      /targets\.t\.defaultTimeout/,
    );
    assert.match(
      failure(withTargets({ t: { factory: 'hpc', defaultTimeout: '5h' } })),
      /^berth\.yaml: targets\.t\.defaultTimeout: 5h is longer than factory "hpc" lets a worker run \(timeLimit 4h\)/,
    );
    // As long as the time limit is allowed: the job then gets a fresh worker, never a pilot.
    assert.equal(
      resolve(withTargets({ t: { factory: 'hpc', defaultTimeout: '4h' } })).targets.t?.defaultTimeoutSeconds,
      14_400,
    );
  });
});

describe('configuration: pilot targets', () => {
  it('wait 5m idle by default; idleTimeout sets it', () => {
    const c = resolve(
      withTargets({
        a: { factory: 'hpc', reuse: true },
        b: { factory: 'hpc', reuse: true, idleTimeout: '30s' },
      }),
    );
    assert.deepEqual([c.targets.a?.idleTimeoutSeconds, c.targets.b?.idleTimeoutSeconds], [300, 30]);
  });

  it('are refused on a factory that is not slurm, and idleTimeout without reuse', () => {
    assert.match(
      failure(withTargets({ t: { factory: 'local', reuse: true } })),
      /targets\.t\.reuse: is for a target of a slurm factory only/,
    );
    assert.match(
      failure(withTargets({ t: { factory: 'hpc', idleTimeout: '1m' } })),
      /targets\.t\.idleTimeout: is for a target with reuse: true only/,
    );
  });

  it('without a defaultTimeout make the server warn that jobs without a timeout never use a pilot', () => {
    const c = resolve(
      withTargets({
        bare: { factory: 'hpc', reuse: true },
        bounded: { factory: 'hpc', reuse: true, defaultTimeout: '10m' },
        plain: { factory: 'hpc' },
      }),
    );
    assert.deepEqual(targetWarnings(c.targets), [
      'target "bare": reuse: true, but jobs submitted without a timeout never run on a pilot; set targets.bare.defaultTimeout to give them one',
    ]);
  });
});

describe('configuration: a target’s defaultRequests and maxRequests', () => {
  it('keeps defaults as written and maxima as amounts; a maximum without a default is the default', () => {
    const c = resolve(
      withTargets({
        t: {
          factory: 'local',
          defaultRequests: { memory: '1Gi', cpu: 1 },
          maxRequests: { memory: '4Gi', gpu: 2 },
        },
        open: { factory: 'local' },
      }),
    );
    assert.deepEqual(c.targets.t?.defaultRequests, { memory: '1Gi', cpu: '1', gpu: '2' });
    assert.deepEqual(c.targets.t?.maxRequests, { memory: 4 * 1024 ** 3, gpu: 2 });
    assert.equal(c.targets.open?.defaultRequests, undefined);
    assert.equal(c.targets.open?.maxRequests, undefined);
  });

  it('names the key of a bad quantity, a bad resource name, jobs, or a default over its maximum', () => {
    for (const [targets, message] of [
      [
        { defaultRequests: { memory: 'lots' } },
        /^berth\.yaml: targets\.t\.defaultRequests\.memory: "lots" is not a quantity/,
      ],
      [{ maxRequests: { 'Bad Name': 1 } }, /^berth\.yaml: targets\.t\.maxRequests\.Bad Name: /],
      [
        { defaultRequests: { jobs: 1 } },
        /targets\.t\.defaultRequests\.jobs: every job requests jobs: 1; leave it out/,
      ],
      [
        { defaultRequests: { memory: '8Gi' }, maxRequests: { memory: '4Gi' } },
        /targets\.t\.defaultRequests\.memory: 8Gi is more than its maximum \(maxRequests\.memory: 4Gi\)/,
      ],
    ] as const)
      assert.match(failure(withTargets({ t: { factory: 'local', ...targets } })), message);
  });
});

describe('configuration: a target’s image and registries', () => {
  it('keeps its image written out in full, and its registries', () => {
    const c = resolve(
      withTargets({
        boxed: { factory: 'local', image: 'busybox:1', registries: ['docker.io', 'Reg.Example.org:5000'] },
        open: { factory: 'local' },
      }),
    );
    assert.equal(c.targets.boxed?.image, 'docker.io/library/busybox:1');
    assert.deepEqual(c.targets.boxed?.registries, ['docker.io', 'reg.example.org:5000']);
    assert.equal(c.targets.open?.image, undefined);
    assert.equal(c.targets.open?.registries, undefined);
  });

  it('names the key of an image that is not a reference, from a registry it refuses, or on a factory without images', () => {
    assert.match(
      failure(withTargets({ t: { factory: 'local', image: 'Busy Box' } })),
      /^berth\.yaml: targets\.t\.image: image "Busy Box": has white space/,
    );
    assert.match(
      failure(withTargets({ t: { factory: 'local', image: 'busybox', registries: ['reg.example.org'] } })),
      /^berth\.yaml: targets\.t\.image: registry docker\.io is not one target "t" allows \(its registries: reg\.example\.org\)/,
    );
    const direct = {
      factories: { direct: { kind: 'slurm', sharedDir: '/shared' }, sim: { kind: 'simulated' } },
      targets: { t: { factory: 'direct', image: 'busybox' } },
    };
    assert.match(
      failure(direct),
      /^berth\.yaml: targets\.t\.image: its factory "direct" \(slurm\) runs jobs without an agent \(sharedDir\), and images need one on the node/,
    );
    assert.match(
      failure({ ...direct, targets: { t: { factory: 'sim', image: 'busybox' } } }),
      /^berth\.yaml: targets\.t\.image: its factory "sim" \(simulated\) runs no processes/,
    );
    // A slurm factory's agents run images.
    assert.equal(
      resolve(withTargets({ t: { factory: 'hpc', image: 'busybox' } })).targets.t?.image,
      'docker.io/library/busybox:latest',
    );
  });
});
