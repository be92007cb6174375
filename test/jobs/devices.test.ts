/**
 * Devices on the local factory (docs/DEVICES.md), end to end with real processes and the devices
 * cgroup: a factory of two "GPUs" — character-device files the test makes with mknod, standing in
 * for /dev/nvidia0 and /dev/nvidia1, with a major number no driver here claims, so that opening
 * one a job may open fails with ENXIO ("No such device or address": no driver) and opening one it
 * may not is refused by the fence (FENCES below). Two jobs asking for gpu=1 run
 * at once on different devices, a third waits for one, and each opens only its own.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseNvidiaSmi, DeviceBook, deviceEnv, type DeviceInventory } from '../../src/domain/devices.js';
import { resolveConfig } from '../../src/config/load.js';
import { resolveDevices } from '../../src/factories/devices.js';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { scratchDir } from '../helpers/scratch.js';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** A character-device major number no driver on this machine has (Linux: /proc/devices). */
function freeMajor(): number | undefined {
  let text = '';
  try {
    text = readFileSync('/proc/devices', 'utf8');
  } catch {
    return undefined;
  }
  const chars = text.split('Block devices:')[0]!;
  const taken = new Set([...chars.matchAll(/^\s*(\d+) /gm)].map((m) => Number(m[1])));
  // 234–254: the range Linux keeps for dynamic and local use.
  for (let major = 234; major <= 254; major++) if (!taken.has(major)) return major;
  return undefined;
}

const major = freeMajor();
const devicesCgroup = (() => {
  try {
    return /\bdevices\b/.test(readFileSync('/proc/self/cgroup', 'utf8'));
  } catch {
    return false;
  }
})();
/**
 * Two fences keep a job from a device file that is not its own, each tried on its own: its mount
 * namespace (docs/SECURITY.md), where the device files it was not given are on a `nodev` mount
 * ("Permission denied") or not in its /dev at all, on any kernel; and, without namespaces, the
 * cgroup v1 devices controller ("Operation not permitted").
 */
const FENCES = {
  namespaces: {
    config: '',
    refused: 'Permission denied',
    unavailable: probeSandbox().available ? undefined : 'jobs get no namespaces here',
  },
  'the devices cgroup': {
    config: ', namespaces: off',
    refused: 'Operation not permitted',
    unavailable: devicesCgroup ? undefined : 'no cgroup v1 devices controller here',
  },
};
const skipFence = (unavailable: string | undefined): string | false =>
  process.getuid?.() !== 0
    ? 'making device files (mknod) needs root'
    : (unavailable ?? (major === undefined ? 'no free character-device major number' : false));

describe('devices, the pure parts', () => {
  const inventory: DeviceInventory = {
    gpu: {
      vendor: 'nvidia',
      devices: [
        { id: '0', files: ['/dev/nvidia0'], uuid: 'GPU-a' },
        { id: '1', files: ['/dev/nvidia1'], uuid: 'GPU-b' },
        { id: '2', files: ['/dev/nvidia2'] },
      ],
    },
  };

  it('hands out free devices in order, all or none, and never one that is held', () => {
    const book = new DeviceBook(inventory);
    assert.deepEqual(book.take('w1', { gpu: 2 }), { gpu: ['0', '1'] });
    assert.equal(book.take('w2', { gpu: 2 }), undefined, 'only one is free');
    assert.deepEqual(book.take('w2', { gpu: 1 }), { gpu: ['2'] });
    book.release('w1');
    assert.equal(book.free('gpu'), 2);
    assert.deepEqual(book.take('w3', { gpu: 2 }), { gpu: ['0', '1'] });
    assert.deepEqual(book.othersFiles({ gpu: ['2'] }), ['/dev/nvidia0', '/dev/nvidia1']);
  });

  it('tells a job its devices: by UUID where known, with the generic variable', () => {
    assert.deepEqual(deviceEnv(inventory, { gpu: ['1', '2'] }), {
      BERTH_DEVICES_GPU: '1,2',
      CUDA_VISIBLE_DEVICES: 'GPU-b,2',
      NVIDIA_VISIBLE_DEVICES: 'GPU-b,2',
    });
    const amd: DeviceInventory = { 'amd.com/gpu': { vendor: 'amd', devices: [{ id: '0', files: [] }] } };
    assert.deepEqual(deviceEnv(amd, { 'amd.com/gpu': ['0'] }), {
      BERTH_DEVICES_AMD_COM_GPU: '0',
      ROCR_VISIBLE_DEVICES: '0',
      HIP_VISIBLE_DEVICES: '0',
    });
  });

  it('says what detect: nvidia found, where nvidia-smi is missing: none', (t) => {
    if (spawnSync('nvidia-smi', ['-L']).error === undefined) return t.skip('this machine has nvidia-smi');
    const f = resolveConfig(
      { factories: { local: { kind: 'local', devices: { gpu: { detect: 'nvidia' } } } } },
      {},
    ).factories.local!;
    const found = resolveDevices('local', f);
    assert.deepEqual(found?.inventory.gpu?.devices, []);
    assert.equal(found?.summary, 'gpu: none — detect: nvidia found none (nvidia-smi not found)');
  });

  it("reads nvidia-smi's CSV, and refuses a line that is not a GPU", () => {
    assert.deepEqual(parseNvidiaSmi('0, GPU-8f2c, NVIDIA H200, 143771\n1, GPU-99aa, NVIDIA H200, 143771\n'), [
      { id: '0', files: ['/dev/nvidia0'], uuid: 'GPU-8f2c', name: 'NVIDIA H200', memoryMiB: 143771 },
      { id: '1', files: ['/dev/nvidia1'], uuid: 'GPU-99aa', name: 'NVIDIA H200', memoryMiB: 143771 },
    ]);
    assert.throws(() => parseNvidiaSmi('No devices were found\n'), /not a GPU/);
  });
});

for (const [fence, { config, refused, unavailable }] of Object.entries(FENCES))
  describe(`a local factory of two GPUs, fenced by ${fence}`, { skip: skipFence(unavailable) }, () => {
    let s: TestServer;
    const dir = scratchDir('berth-devices-');
    const file = (id: string) => join(dir, `fakegpu${id}`);
    before(async () => {
      for (const id of ['0', '1']) {
        const made = spawnSync('mknod', ['-m', '0666', file(id), 'c', String(major), id]);
        assert.equal(made.status, 0, `mknod: ${made.stderr.toString()}`);
      }
      s = await startTestServer({
        config: [
          'graceSeconds: 1',
          'heartbeatSeconds: 10',
          'factories:',
          `  local: { kind: local, capacity: 4${config}, devices: { gpu: [{ id: "0", files: [${file('0')}] }, { id: "1", files: [${file('1')}] }] } }`,
          'targets:',
          '  local: { factory: local }',
        ].join('\n'),
      });
      await call(s.api, s.adminToken, 'POST', '/cluster-queues', { name: 'gpus', quota: { gpu: '4' } });
      await call(s.api, s.adminToken, 'POST', '/projects', { name: 'ml', clusterQueue: 'gpus' });
    });
    after(async () => {
      await s?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    /** Says which devices it got, tries to open both device files, then waits for its gate. */
    const probe = [
      'echo "GOT ${BERTH_DEVICES_GPU:-none} CUDA ${CUDA_VISIBLE_DEVICES:-none}"',
      `for i in 0 1; do if cat ${dir}/fakegpu$i >/dev/null 2>"$BERTH_WORKDIR/e"; then echo "OPEN $i ok"; else echo "OPEN $i $(cat "$BERTH_WORKDIR/e")"; fi; done`,
      `while [ ! -e ${dir}/go-$BERTH_JOB_ID ]; do sleep 0.05; done`,
    ].join('; ');
    const log = async (id: number) => (await call(s.api, s.adminToken, 'GET', `/jobs/${id}/logs`)).text;
    const go = (id: number) => writeFileSync(join(dir, `go-${id}`), '');

    it('runs two jobs of gpu=1 at once on different devices, each opening only its own; a third waits', async () => {
      const gpu1 = { script: probe, requests: { gpu: '1' } };
      const a = await submit(s.api, s.adminToken, 'ml', gpu1);
      const b = await submit(s.api, s.adminToken, 'ml', gpu1);
      for (const j of [a, b])
        await waitFor(
          `job ${j.id} to run`,
          async () => (await getJob(s.api, s.adminToken, j.id)).state === 'running',
        );
      const c = await submit(s.api, s.adminToken, 'ml', gpu1);
      const waiting = await waitFor('job c to wait for a gpu', async () => {
        const v = await getJob(s.api, s.adminToken, c.id);
        return /waiting for 1 gpu of factory local: 2\/2 in use/.test(v.reason) ? v : undefined;
      });
      assert.notEqual(waiting.state, 'running', 'admitted by quota, it waits at the factory for a device');

      // Recorded: the job's view names its worker's devices (once the worker's record is written:
      // the job may start a moment before), and its timeline says so.
      const heldA = await waitFor("job a's devices in its view", async () => {
        const view = await call<{ worker: { devices?: Record<string, string[]>[] } | null }>(
          s.api,
          s.adminToken,
          'GET',
          `/jobs/${a.id}`,
        );
        return view.body.worker?.devices?.[0]?.gpu;
      });
      assert.equal(heldA.length, 1);
      assert.ok(
        (await events(s.api, s.adminToken, a.id)).some(
          (e) => e.type === 'devices-assigned' && e.message.endsWith(`holds gpu ${heldA[0]}`),
        ),
      );
      // The factory's figures (the dashboard's factory card): both devices held.
      const figures = await call<
        { name: string; devices?: { kind: string; total: number; inUse: number }[] }[]
      >(s.api, s.adminToken, 'GET', '/factories');
      assert.deepEqual(figures.body.find((f) => f.name === 'local')?.devices, [
        { kind: 'gpu', total: 2, inUse: 2 },
      ]);
      go(a.id);
      go(b.id);
      const logs = [];
      for (const j of [a, b]) {
        assert.equal((await waitDone(s.api, s.adminToken, j.id)).state, 'succeeded');
        logs.push(await log(j.id));
      }
      const got = logs.map((l) => /^GOT (\S+) CUDA (\S+)$/m.exec(l)?.slice(1, 3));
      assert.deepEqual(got.map((g) => g?.[0]).sort(), ['0', '1'], logs.join('\n---\n'));
      for (const [i, l] of logs.entries()) {
        const [mine] = got[i]!;
        const other = mine === '0' ? '1' : '0';
        assert.equal(got[i]![1], mine, 'CUDA_VISIBLE_DEVICES names the same device');
        // Its own: the fence lets it through to the kernel, which has no driver for the number.
        assert.match(l, new RegExp(`^OPEN ${mine} .*No such device or address`, 'm'), l);
        assert.match(l, new RegExp(`^OPEN ${other} .*${refused}`, 'm'), l);
      }

      go(c.id);
      assert.equal((await waitDone(s.api, s.adminToken, c.id)).state, 'succeeded');
      assert.match(await log(c.id), /^GOT [01] /m);
      // Accounted as any request: gpu·hours in the project's usage.
      const usage = await call<{ totals: { resourceHours: Record<string, number> } }>(
        s.api,
        s.adminToken,
        'GET',
        '/usage?since=1d',
      );
      assert.ok((usage.body.totals.resourceHours.gpu ?? 0) > 0, JSON.stringify(usage.body.totals));
    });

    it('keeps a job that asked for no device from every device file', async () => {
      const j = await submit(s.api, s.adminToken, 'ml', { script: probe });
      go(j.id);
      assert.equal((await waitDone(s.api, s.adminToken, j.id)).state, 'succeeded');
      const l = await log(j.id);
      assert.match(l, /^GOT none CUDA none$/m);
      assert.match(l, new RegExp(`^OPEN 0 .*${refused}`, 'm'), l);
      assert.match(l, new RegExp(`^OPEN 1 .*${refused}`, 'm'), l);
    });

    it('refuses, in one line, a job asking for more devices than the factory has', async () => {
      const r = await call<{ error: { message: string } }>(s.api, s.adminToken, 'POST', '/projects/ml/jobs', {
        command: ['true'],
        requests: { gpu: '3' },
      });
      assert.equal(r.status, 422);
      assert.match(
        r.body.error.message,
        /requests\.gpu: 3 is more than target "local" can ever give \(factory local has 2 gpu\)/,
      );
    });

    it('says what it has in berth targets', async () => {
      const t = await call<{ name: string; devices: string | null }[]>(
        s.api,
        s.adminToken,
        'GET',
        '/targets',
      );
      assert.equal(t.body.find((x) => x.name === 'local')?.devices, 'gpu: 2 (0, 1)');
    });
  });
