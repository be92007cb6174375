/**
 * The slurm factory's pure rules, without Slurm: what one squeue answer says of a worker, what a
 * restarted server takes over, how workers' Slurm jobs are named, and the agent's batch script.
 * (The same rules on real Slurm: slurm-poll.test.ts, slurm.test.ts and the conformance suite.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LeftWorker } from '../../src/factories/factory.js';
import { agentScript } from '../../src/factories/slurm/agent-script.js';
import type { SlurmJob } from '../../src/factories/slurm/squeue-format.js';
import { planTakeOver } from '../../src/factories/slurm/take-over.js';
import { judge, submitting, takenOver, type Tracked } from '../../src/factories/slurm/tracked-worker.js';
import { WorkerNames } from '../../src/factories/slurm/worker-names.js';

const job = (fields: Partial<SlurmJob> = {}): SlurmJob => ({
  id: '42',
  name: 'berth-i-f-w7',
  state: 'RUNNING',
  reason: 'None',
  nodes: ['n2'],
  timeLeftSeconds: 600,
  exitCode: null,
  exitSignal: null,
  ...fields,
});

/** A worker whose sbatch returned at 1,000 ms (Slurm job 42), seen by an earlier squeue or not. */
const known = (fields: Partial<Tracked> = {}): Tracked => ({
  ...submitting('berth-i-f-w7', 0),
  slurmId: '42',
  knownAt: 1000,
  ...fields,
});

describe('what one squeue answer says of a worker (judge)', () => {
  const GRACE = 30_000;
  const cases: { what: string; t: Tracked; j?: SlurmJob; asked: number; want: Record<string, unknown> }[] = [
    {
      what: 'a worker still being submitted: nothing',
      t: submitting('berth-i-f-w7', 0),
      asked: 60_000,
      want: { kind: 'unknown' },
    },
    {
      what: 'an answer asked before its sbatch returned, without it: nothing, however long it waited',
      t: known({ submittedAt: 0, knownAt: 40_000 }),
      asked: 39_999,
      want: { kind: 'unknown' },
    },
    {
      what: 'a run that has ended already: nothing',
      t: known({ ended: 'exit-file' }),
      j: job({ state: 'COMPLETED' }),
      asked: 5000,
      want: { kind: 'unknown' },
    },
    {
      what: 'not listed yet, within the grace after its sbatch: still alive, no reason',
      t: known(),
      asked: 1000 + GRACE,
      want: { kind: 'live', running: false, waiting: null },
    },
    {
      what: 'never listed, past the grace: gone, and unseen (its destroy cancels it)',
      t: known(),
      asked: 1001 + GRACE,
      want: { kind: 'gone', how: 'unseen', lost: 'is gone (unseen by squeue 30 s after sbatch)' },
    },
    {
      what: 'listed before, missing now: gone at once, ended by Slurm',
      t: known({ seen: true }),
      asked: 2000,
      want: { kind: 'gone', how: 'slurm', lost: 'is gone', state: 'and left squeue' },
    },
    {
      what: 'pending: alive, with Slurm’s reason',
      t: known(),
      j: job({ state: 'PENDING', reason: 'Resources', nodes: [], timeLeftSeconds: null }),
      asked: 2000,
      want: { kind: 'live', running: false, waiting: 'Resources' },
    },
    {
      what: 'running: alive on its node, its time limit ending when squeue says',
      t: known(),
      j: job(),
      asked: 2000,
      want: { kind: 'live', running: true, host: 'n2', waiting: null, endsAt: 2000 + 600_000 },
    },
    {
      what: 'completing: still alive (its output may still come)',
      t: known(),
      j: job({ state: 'COMPLETING', timeLeftSeconds: null }),
      asked: 2000,
      want: { kind: 'live', running: true, waiting: null },
    },
    {
      what: 'ended by Slurm: gone, with its state and reason',
      t: known({ seen: true }),
      j: job({ state: 'NODE_FAIL', reason: 'NodeDown' }),
      asked: 2000,
      want: {
        kind: 'gone',
        how: 'slurm',
        lost: 'ended NODE_FAIL (NodeDown)',
        state: 'NODE_FAIL',
        host: 'n2',
      },
    },
    {
      what: 'ended, with no reason to give: its state alone',
      t: known(),
      j: job({ state: 'CANCELLED', reason: 'None' }),
      asked: 2000,
      want: { kind: 'gone', lost: 'ended CANCELLED' },
    },
  ];
  for (const c of cases)
    it(c.what, () => {
      const v = judge(c.t, c.j, c.asked, GRACE) as Record<string, unknown>;
      for (const [k, want] of Object.entries(c.want))
        assert.deepEqual(v[k], want, `${k} of ${JSON.stringify(v)}`);
    });
});

describe('what a restarted server takes over (planTakeOver)', () => {
  const names = new WorkerNames('i', 'f');
  const left: LeftWorker[] = [
    { workerId: 1, handle: { slurmJobId: '11', slurmJobName: 'berth-i-f-w1' } },
    { workerId: 2, handle: { slurmJobId: '12', slurmJobName: 'berth-i-f-w2', jobId: 20 } },
    { workerId: 3, handle: { slurmJobId: '13', slurmJobName: 'berth-i-f-w3', jobId: 30 } },
    { workerId: 4, handle: null },
  ];
  const live = [
    job({ id: '11', name: 'berth-i-f-w1' }),
    job({ id: '12', name: 'berth-i-f-w2', state: 'PENDING' }),
    job({ id: '19', name: 'berth-i-f-w9' }), // its worker destroyed: an orphan
    job({ id: '21', name: 'berth-i-f-w1' }), // a second job of worker 1: an orphan
    job({ id: '22', name: 'berth-i-f-wx' }), // a name no worker of ours has
  ];

  it('adopts live jobs of the workers left, by name, and cancels every other job of its own', () => {
    const plan = planTakeOver(live, left, names);
    assert.deepEqual(
      plan.adopt.map((a) => [a.workerId, a.slurmId, a.jobId]),
      [
        [1, '11', undefined],
        [2, '12', undefined],
      ],
    );
    assert.deepEqual(
      plan.orphans.map((j) => j.id),
      ['19', '21', '22'],
    );
  });

  it('with direct workers, keeps their berth job, and adopts one whose ended job left its exit status', () => {
    const plan = planTakeOver(live, left, names, (name) => name === 'berth-i-f-w3');
    assert.deepEqual(
      plan.adopt.map((a) => [a.workerId, a.slurmId, a.jobId, a.job?.state]),
      [
        [1, '11', undefined, 'RUNNING'],
        [2, '12', 20, 'PENDING'],
        [3, '13', 30, undefined],
      ],
    );
  });

  it('takes over a running worker with its time left, and a pending one without', () => {
    assert.equal(takenOver('w', '11', job({ timeLeftSeconds: 60 }), 1000).endsAt, 61_000);
    assert.equal(takenOver('w', '12', job({ state: 'PENDING' }), 1000).endsAt, undefined);
  });
});

describe('names and scripts of Slurm workers', () => {
  it('names a worker after its installation and factory, and reads only its own names back', () => {
    const names = new WorkerNames('c8fe51b8', 'hpc');
    assert.equal(names.of(7), 'berth-c8fe51b8-hpc-w7');
    assert.equal(names.workerOf('berth-c8fe51b8-hpc-w7'), 7);
    for (const other of [
      'berth-c8fe51b8-hpc2-w7',
      'berth-other-hpc-w7',
      'berth-c8fe51b8-hpc-w0',
      'berth-c8fe51b8-hpc-wx',
    ])
      assert.equal(names.workerOf(other), undefined, other);
  });

  it("runs the agent with the server's URL and the worker, quoted; a gang through srun", () => {
    const o = { agentCommand: ['/opt/my berth/berth'], workRoot: '/scratch', ca: '/etc/ca.pem' };
    assert.equal(
      agentScript(o, 'https://berth:7070', 5, 1),
      "#!/bin/sh\nexec '/opt/my berth/berth' agent --server https://berth:7070 --worker 5 --work-root /scratch --ca /etc/ca.pem\n",
    );
    assert.match(
      agentScript({ agentCommand: ['berth'] }, 'http://h', 5, 3),
      /^#!\/bin\/sh\nexec srun --kill-on-bad-exit=0 berth agent /,
    );
  });
});
