/**
 * kill -9 of the server while it pulls a job's image, then a restart (issue #41): nothing of the
 * pull is left running or half-written in use, and the job runs from the whole image, on a worker
 * made anew (its first never started, so nothing is charged: it needs no retry budget). Root and
 * bubblewrap needed, as for any image.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { events, submit, waitDone } from '../helpers/jobs.js';
import { imageSkip, pushImage, startRegistry, type TestRegistry } from '../helpers/registry.js';
import { scratchDir } from '../helpers/scratch.js';
import { call } from '../helpers/server.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { waitFor } from '../helpers/wait.js';

const support = probeSandbox();
const skip = imageSkip(support);

/** Whether a skopeo or umoci process still works in `dir`. */
const pulling = (dir: string): boolean => {
  try {
    return execFileSync('pgrep', ['-af', 'skopeo|umoci'], { encoding: 'utf8' }).includes(dir);
  } catch {
    return false; // pgrep: none
  }
};

describe('kill -9 of the server mid-pull', { skip }, () => {
  const dir = scratchDir('berth-image-crash-');
  const data = join(dir, 'data');
  let registry: TestRegistry | undefined;
  let server: ServerProcess | undefined;
  after(async () => {
    if (server) await killHard(server);
    await registry?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves no pull running and no half image in use; after a restart the job runs from the whole image', async () => {
    registry = await startRegistry(dir);
    // Big enough that the kill lands while it is fetched or unpacked (random bytes: no compression).
    pushImage(dir, registry, 'team/big', '1', { fillerMegabytes: 96 });
    server = await spawnServer(data);
    const job = await submit(server.api, server.token, 'default', {
      image: `${registry.host}/team/big:1`,
      script: 'wc -c < /filler',
    });
    const images = join(data, 'images');
    await waitFor('the pull to begin', () =>
      existsSync(images) ? readdirSync(images).some((n) => n.startsWith('.partial-')) : false,
    );
    await killHard(server);
    server = undefined;
    await waitFor('skopeo and umoci to die with the server', () => !pulling(data));
    assert.ok(
      !readdirSync(images).some((n) => n.startsWith('sha256-')),
      `no image under its digest's name yet: ${readdirSync(images).join(' ')}`,
    );

    server = await spawnServer(data);
    const done = await waitDone(server.api, server.token, job.id, 180_000);
    const log = (await call(server.api, server.token, 'GET', `/jobs/${job.id}/logs`)).text;
    assert.equal(done.state, 'succeeded', `${done.reason}: ${log}`);
    assert.equal(log.trim(), String(96 << 20), 'the whole filler');
    const timeline = (await events(server.api, server.token, job.id)).map((e) => e.type);
    assert.equal(timeline.filter((t) => t === 'worker-creating').length, 2, timeline.join(' '));
    assert.equal(timeline.filter((t) => t === 'image-pinned').length, 1, 'pinned once');
    assert.deepEqual(
      readdirSync(images).filter((n) => n.startsWith('.partial-')),
      [],
      'what the killed pull left was removed',
    );
  });
});
