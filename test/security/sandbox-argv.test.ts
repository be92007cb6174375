/**
 * The argv a job's namespaces are made from (agent/sandbox.ts), pure: what is bound back where
 * a private mount hides it, with the directories above it traversable; only the job's own device
 * files; the drop to its uid last, before its command.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sandboxArgv, type SandboxSpec } from '../../src/agent/sandbox.js';

const base: SandboxSpec = { workdir: '/srv/berth/workers/7', tmpBytes: 1024 };

/** The options (pairs and triples) the argv has, as text, to look for runs in. */
const text = (argv: string[]): string => argv.join(' ');

describe('a job’s namespaces, as bubblewrap is told them', () => {
  const cases: { name: string; spec: SandboxSpec; has: string[]; hasNot: string[] }[] = [
    {
      name: 'a working directory outside /tmp needs no bind',
      spec: base,
      has: [
        '--unshare-pid --unshare-ipc',
        '--proc /proc --dev /dev',
        '--size 1024 --tmpfs /tmp',
        '--size 1024 --tmpfs /dev/shm',
        '--chdir /srv/berth/workers/7',
      ],
      hasNot: ['--bind /srv', '--unshare-net', '--dev-bind'],
    },
    {
      name: 'one under /tmp is bound back, the directories above it made traversable first',
      spec: { ...base, workdir: '/tmp/data/workers/7' },
      has: [
        '--perms 0711 --dir /tmp/data --perms 0711 --dir /tmp/data/workers --bind /tmp/data/workers/7 /tmp/data/workers/7',
      ],
      hasNot: ['--dir /tmp '],
    },
    {
      name: 'what the job is told of under /tmp is bound read-only; elsewhere it is there already',
      spec: { ...base, keep: ['/tmp/ca.pem', '/opt/berth'] },
      has: ['--ro-bind /tmp/ca.pem /tmp/ca.pem'],
      hasNot: ['/opt/berth'],
    },
    {
      name: 'only its own device files, at their paths',
      spec: { ...base, devices: ['/dev/nvidia1', '/dev/nvidiactl'] },
      has: ['--dev-bind /dev/nvidia1 /dev/nvidia1 --dev-bind /dev/nvidiactl /dev/nvidiactl'],
      hasNot: ['/dev/nvidia0'],
    },
    { name: 'network: none', spec: { ...base, network: 'none' }, has: ['--unshare-net'], hasNot: [] },
  ];
  for (const c of cases)
    it(c.name, () => {
      const argv = text(sandboxArgv(c.spec, ['sh', '-c', 'true']));
      for (const run of c.has) assert.ok(argv.includes(run), `${run}\nin: ${argv}`);
      for (const run of c.hasNot) assert.ok(!argv.includes(run), `not ${run}\nin: ${argv}`);
    });

  it('drops to the job’s uid last, with no supplementary groups, right before its command', () => {
    const argv = sandboxArgv(base, ['sh', '-c', 'true'], { uid: 100_001, gid: 100_001 });
    const sep = argv.indexOf('--');
    assert.deepEqual(argv.slice(sep), [
      '--',
      '/usr/bin/setpriv',
      '--reuid=100001',
      '--regid=100001',
      '--clear-groups',
      '--',
      'sh',
      '-c',
      'true',
    ]);
    assert.ok(argv.indexOf('--tmpfs') < sep && argv.indexOf('--info-fd') < sep);
  });

  it('in an image: its overlay mounted first, every mount inside its root, the job entering it as its uid last', () => {
    const image = {
      rootfs: '/srv/berth/images/sha256-ab/rootfs',
      layer: '/srv/berth/workers/7/layer',
      cwd: '/app',
    };
    const argv = sandboxArgv(
      { ...base, keep: ['/etc/berth/ca.pem'] },
      ['sh', '-c', 'true'],
      { uid: 100_001, gid: 100_002 },
      image,
    );
    const all = text(argv);
    const r = '/srv/berth/workers/7/layer/root';
    assert.equal(argv[0], '/usr/bin/unshare');
    assert.ok(all.startsWith('/usr/bin/unshare --mount --propagation private -- /bin/sh -c'), all);
    assert.ok(all.includes(`berth-image ${image.rootfs} ${image.layer} /usr/bin/bwrap`), all);
    for (const run of [
      `--proc ${r}/proc --dev ${r}/dev`,
      `--tmpfs ${r}/tmp`,
      `--tmpfs ${r}/dev/shm`,
      `--bind /srv/berth/workers/7 ${r}/srv/berth/workers/7`,
      `--ro-bind /etc/berth/ca.pem ${r}/etc/berth/ca.pem`,
      `--chdir / --info-fd 3 -- /usr/bin/unshare --root=${r} --wd=/app --setuid=100001 --setgid=100002 -- sh -c true`,
    ])
      assert.ok(all.includes(run), `${run}\nin: ${all}`);
    assert.ok(!all.includes('setpriv'), all);
    assert.throws(() => sandboxArgv(base, ['true'], undefined, { ...image, layer: '/srv/a,b' }), /overlayfs/);
  });

  it('with a terminal: the command takes it as its controlling one, in a session of its own, as root before the drop', () => {
    const argv = sandboxArgv(base, ['sh'], { uid: 100_001, gid: 100_001 }, undefined, true);
    const sep = argv.indexOf('--');
    assert.deepEqual(argv.slice(sep, sep + 4), ['--', '/usr/bin/setsid', '--ctty', '/usr/bin/setpriv']);
    const image = { rootfs: '/srv/i/rootfs', layer: '/srv/w/7/layer', cwd: '/' };
    const inImage = text(sandboxArgv(base, ['sh'], { uid: 100_001, gid: 100_001 }, image, true));
    assert.ok(inImage.includes('--info-fd 3 -- /usr/bin/setsid --ctty /usr/bin/unshare --root='), inImage);
    assert.ok(!text(sandboxArgv(base, ['sh'])).includes('setsid'), 'none without a terminal');
  });
});
