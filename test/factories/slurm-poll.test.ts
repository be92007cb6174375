/**
 * The slurm factory's squeue poll, on real Slurm (scripts/slurm/cluster.sh), driven directly: what
 * one squeue answer may and may not be taken to say about a worker.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isEndedState, SlurmCli } from '../../src/factories/slurm/slurm-cli.js';
import { SlurmFactory } from '../../src/factories/slurm/slurm-factory.js';
import type { WorkerRequest } from '../../src/factories/factory.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';

/** What the controller asks of the factory for worker `workerId` of a one-worker job. */
const workerRequest = (workerId: number): WorkerRequest => ({
  workerId,
  jobId: workerId,
  project: 'p',
  target: 't',
  url: 'http://127.0.0.1:1',
  token: null,
  registration: 'credential',
  members: 1,
});

describe('the slurm factory polling squeue', { skip: slurmSkip() }, () => {
  const slurm = new SlurmCli();
  const installationId = `poll${process.pid}`;
  let factory: SlurmFactory;
  const lost: string[] = [];

  before(async () => {
    Object.assign(process.env, (await startSlurm()).env);
    factory = new SlurmFactory({
      name: 'poll',
      capacity: 20,
      installationId,
      listener: {
        handleChanged() {},
        workerLost: (workerId, message) => lost.push(`worker ${workerId}: ${message}`),
      },
      partition: 'main',
      timeLimitSeconds: 600,
      sbatchArgs: [],
      // The "agent" sleeps: the worker runs until it is destroyed, and reports nothing.
      agentCommand: ['sh', '-c', 'exec sleep 300', 'agent'],
      // The poll is driven by the test; one sbatch at a time, so that many return mid-squeue.
      pollSeconds: 3600,
      submitConcurrency: 1,
      // No grace at all: a worker squeue does not list is lost at once, unless the poll cannot
      // tell (its squeue started before the worker's sbatch returned).
      missingGraceSeconds: 0,
    });
  });

  after(async () => {
    await factory.close();
    // Whatever a failed test left of this factory is cancelled.
    const ours = await slurm.jobs({ namePrefix: `berth-${installationId}-` });
    await Promise.all(ours.map((j) => slurm.cancel(j.id)));
  });

  it('does not take a worker submitted while a squeue was running for lost', async (t) => {
    // The factory's helper process and timers do not keep a process alive (a server's socket
    // does): this test's wait must.
    const alive = setInterval(() => {}, 1000);
    t.after(() => clearInterval(alive));
    const ids = Array.from({ length: 12 }, (_, i) => i + 1);
    let created = 0;
    let polls = 0;
    const creating = Promise.all(
      ids.map(async (workerId) => {
        await factory.create(workerRequest(workerId));
        created++;
      }),
    );
    // Polls back to back while the sbatches return, one at a time: most return mid-squeue. (A
    // poll with nothing to watch returns at once: the loop yields to I/O between polls.)
    while (created < ids.length) {
      await factory.poll();
      if (created > 0) polls++;
      await new Promise(setImmediate);
    }
    await creating;
    await factory.poll(); // one whose squeue started after every sbatch had returned
    assert.ok(polls >= 2, `the factory polled ${polls} times while the workers were submitted`);
    assert.deepEqual(lost, [], 'no worker is lost: each one is in squeue');
    const live = (await slurm.jobs({ namePrefix: `berth-${installationId}-` })).filter(
      (j) => !isEndedState(j.state),
    );
    assert.equal(live.length, ids.length, 'every worker has its Slurm job');
    // Destroying them is the conformance suite's to test; `after` cancels them without waiting
    // (one cancelled while Slurm still launches it can take KillWait, 30 s, to end).
  });

  it("says a pending worker's reason at every poll, not only when it changes", async (t) => {
    // A listener may not know the worker at the first poll (one taken over at start, before the
    // controller has restored its job): the reason must come again.
    const alive = setInterval(() => {}, 1000);
    t.after(() => clearInterval(alive));
    const heard: string[] = [];
    const held = new SlurmFactory({
      name: 'held',
      capacity: 1,
      installationId,
      listener: {
        handleChanged() {},
        workerLost: (workerId, message) => lost.push(`worker ${workerId}: ${message}`),
        workerWaiting: (workerId, reason) => heard.push(`${workerId}: ${reason}`),
      },
      partition: 'main',
      timeLimitSeconds: 600,
      sbatchArgs: ['--hold'],
      agentCommand: ['sh', '-c', 'exec sleep 300', 'agent'],
      pollSeconds: 3600,
    });
    try {
      await held.create(workerRequest(100));
      await held.poll();
      await held.poll();
      assert.equal(heard.length, 2, heard.join('\n'));
      for (const line of heard) assert.match(line, /^100: Slurm keeps job \d+ pending: .*JobHeldUser/);
    } finally {
      await held.close();
    }
  });
});
