/**
 * A session names its job (agent/host-exec.ts): a pilot's worker runs one job after another, often
 * of different projects, and a session asked for a job that has just ended there — the server's
 * check passed a moment before the end — is refused, never run in the worker's next job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HostExecs, type RunningMember } from '../../src/agent/host-exec.js';
import type { SessionEvent } from '../../src/agent/host-protocol.js';
import type { HeldTerminal } from '../../src/agent/job-terminal.js';

describe('a session in a job on a reused worker', () => {
  // The worker now runs job 2 (its process is not needed: the refusal comes before it is asked).
  const next = { running: { jobId: 2, env: {} } } as unknown as RunningMember;
  const terminal = { jobId: 2 } as unknown as HeldTerminal;

  const cases: [string, { command: string[]; attach?: { cols: number; rows: number } }][] = [
    ['an exec', { command: ['cat', '/etc/hostname'] }],
    ['an attach', { command: [], attach: { cols: 80, rows: 24 } }],
  ];
  for (const [what, run] of cases)
    it(`refuses ${what} for the job that ended there, at once`, () => {
      const sent: SessionEvent[] = [];
      const execs = new HostExecs((e) => sent.push(e));
      execs.handle(
        { type: 'exec', session: 9, jobId: 1, workerId: 5, rank: 0, ...run },
        () => next,
        () => terminal,
      );
      assert.deepEqual(sent, [
        {
          type: 'exec-exit',
          session: 9,
          exitCode: null,
          signal: null,
          message: 'job 1 has ended on worker 5',
        },
      ]);
    });
});
