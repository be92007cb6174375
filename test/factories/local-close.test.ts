/**
 * A local factory closed while a worker is being made (a server stopping as a job is handed its
 * worker): the making fails, and no agent host is started after the close — one was, once, and
 * kept its test process (and CI) from ever exiting.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { LocalFactory } from '../../src/factories/local.js';
import { scratchDir } from '../helpers/scratch.js';

/** The pids of this process's children that run the agent host. */
function agentHosts(): number[] {
  const children: number[] = [];
  for (const task of readdirSync(`/proc/${process.pid}/task`)) {
    const text = readFileSync(`/proc/${process.pid}/task/${task}/children`, 'utf8').trim();
    if (text) children.push(...text.split(/\s+/).map(Number));
  }
  return children.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('host-main');
    } catch {
      return false; // gone meanwhile
    }
  });
}

describe('a local factory closed while it makes a worker', { skip: process.platform !== 'linux' }, () => {
  const dataDir = scratchDir('berth-local-close-');
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('fails the making, and starts no agent host after its close', async () => {
    const listener = { handleChanged: () => {}, workerLost: () => {} };
    const factory = new LocalFactory({ name: 'local', capacity: 1, dataDir, listener, cgroups: 'off' });
    const before = agentHosts();
    // Past its first check at once; the rest of its making waits for the factory's start.
    const making = factory.create({
      workerId: 1,
      jobId: 1,
      project: 'p',
      target: 'local',
      url: 'http://127.0.0.1:1',
      token: 't',
      members: 1,
    });
    await factory.close();
    const outcome = await making.then(
      () => 'made',
      (e: Error) => e.message,
    );
    const leaked = agentHosts().filter((pid) => !before.includes(pid));
    for (const pid of leaked) process.kill(pid, 'SIGKILL'); // so that a failure does not hang the run
    assert.deepEqual(leaked, [], 'an agent host started after the close');
    assert.match(outcome, /the local factory is closed/);
  });
});
