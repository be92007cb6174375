/**
 * An interactive job's terminal (agent/job-terminal.ts) with a real pseudo-terminal and a real
 * process on it: what a client that attaches late is shown, a newer attach taking it over, and
 * the two bounds — no client for the grace, nothing moving for the idle time — each ending the
 * job saying which.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { JobTerminal, type TerminalClient } from '../../src/agent/job-terminal.js';
import { waitFor } from '../helpers/wait.js';

/** A client that keeps what it is shown and why it was let go. */
function client(): TerminalClient & { shown: () => string; why: unknown[] } {
  const chunks: Buffer[] = [];
  const why: unknown[] = [];
  return {
    output: (d) => void chunks.push(d),
    detached: (w) => void why.push(w),
    shown: () => Buffer.concat(chunks).toString(),
    why,
  };
}

/** Runs `script` on the terminal's slave, as the job's command would be. */
function runOn(t: JobTerminal, script: string) {
  const slave = t.slave!;
  const child = spawn('/bin/sh', ['-c', script], { stdio: [slave, slave, slave] });
  t.spawned();
  return child;
}

const LONG = { detachGraceMs: 60_000, idleMs: 60_000 };

describe("an interactive job's terminal", () => {
  it('shows a client that attaches late what the job wrote before, and lets go of it for a newer one', async () => {
    const ended: string[] = [];
    const t = new JobTerminal({ cols: 80, rows: 24 }, LONG, (why) => ended.push(why));
    const logged: Buffer[] = [];
    t.onOutput((d) => logged.push(d));
    const child = runOn(t, 'echo written-before; exec sleep 30');
    await waitFor('the job to write', () => Buffer.concat(logged).toString().includes('written-before'));
    const first = client();
    t.attach(first, { cols: 100, rows: 30 });
    assert.match(first.shown(), /written-before/);
    const second = client();
    t.attach(second, { cols: 100, rows: 30 });
    assert.match(String(first.why[0]), /attached elsewhere/);
    assert.match(second.shown(), /written-before/);
    t.end({ exitCode: 0, signal: null });
    assert.deepEqual(second.why, [{ exitCode: 0, signal: null }]);
    child.kill('SIGKILL');
    assert.deepEqual(ended, [], 'neither bound was reached');
  });

  it('ends the job when no client attaches within the grace; its command never starts', async () => {
    const ended: string[] = [];
    const t = new JobTerminal({ cols: 80, rows: 24 }, { detachGraceMs: 150, idleMs: 60_000 }, (why) =>
      ended.push(why),
    );
    assert.equal(await t.waitForClient(), false);
    assert.deepEqual(ended, ['no terminal attached for 0s (interactive.detachGrace)']);
    t.end({ exitCode: null, signal: null });
  });

  it('ends an idle job after warning on the terminal; input or output starts the clock again', async () => {
    const ended: string[] = [];
    const t = new JobTerminal({ cols: 80, rows: 24 }, { detachGraceMs: 60_000, idleMs: 1_000 }, (why) =>
      ended.push(why),
    );
    const c = client();
    t.attach(c, { cols: 80, rows: 24 });
    const child = runOn(t, 'exec sleep 30');
    const started = Date.now();
    // Typed at 600 ms: the idle clock starts again then.
    setTimeout(() => t.input(c, Buffer.from('x')), 600);
    await waitFor('the idle end', () => ended.length > 0, 10_000);
    assert.ok(
      Date.now() - started >= 1_500,
      `ended ${Date.now() - started} ms after the start, not a second after the input`,
    );
    assert.match(c.shown(), /\[berth\] idle for \ds: this job ends in \ds unless there is input or output/);
    assert.match(
      c.shown(),
      /\[berth\] no input or output for 1s \(interactive\.idleTimeout\): this job ends now/,
    );
    assert.deepEqual(ended, ['no input or output for 1s (interactive.idleTimeout)']);
    t.end({ exitCode: null, signal: null });
    child.kill('SIGKILL');
  });
});
