/**
 * What a job's process says of its own end before Node does (agent/job-process.ts `exited`): a
 * stop that arrives after the command exited on its own, but before Node has read that exit, must
 * not become the job's outcome (agent/run-job.ts). The test holds Node's event loop, so that the
 * exit stays unread, while the kernel shows the child ended; plain and, where it runs, in a sandbox.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { JobProcess, type LaunchOptions } from '../../src/agent/job-process.js';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';

/** Blocks this thread (the event loop included) until `check` holds or `ms` passed. */
function holdUntil(check: () => boolean, ms = 10_000): boolean {
  const deadline = Date.now() + ms;
  const cell = new Int32Array(new SharedArrayBuffer(4));
  while (!check()) {
    if (Date.now() > deadline) return false;
    Atomics.wait(cell, 0, 0, 2);
  }
  return true;
}

/** The kernel's word: process `pid` is a zombie (ended, not yet reaped by its parent, Node). */
function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

const exitOf = (job: JobProcess) => new Promise((resolve) => job.child.once('exit', resolve));

const ways: [string, Partial<LaunchOptions>, string | undefined][] = [
  ['plain', {}, undefined],
  [
    'in a sandbox',
    { sandbox: { workdir: '/', tmpBytes: 2 ** 20 } },
    probeSandbox().available ? undefined : 'no sandbox here',
  ],
];

for (const [way, options, skip] of ways) {
  describe(`a job process, ${way}`, { skip }, () => {
    it('has exited once the kernel says so, before Node has read it', async () => {
      const job = JobProcess.start({ command: ['true'], workdir: '/', env: process.env, ...options });
      const exit = exitOf(job);
      await new Promise((resolve) => job.child.once('spawn', resolve));
      // Nothing below lets the event loop turn: Node cannot reap the child or see its exit.
      assert.ok(
        holdUntil(() => zombie(job.child.pid!)),
        'the child ended',
      );
      assert.equal(job.child.exitCode, null, 'Node has not read the exit yet');
      assert.equal(job.exited(), true);
      await exit;
      assert.equal(job.exited(), true, 'and after Node has');
    });

    it('has not exited while its command runs', async () => {
      const job = JobProcess.start({ command: ['sleep', '30'], workdir: '/', env: process.env, ...options });
      const exit = exitOf(job);
      await new Promise((resolve) => job.child.once('spawn', resolve));
      assert.equal(job.exited(), false);
      job.kill();
      await exit;
      assert.equal(job.exited(), true);
      await job.gone();
    });
  });
}
