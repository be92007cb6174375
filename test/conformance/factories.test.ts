/** Every factory kind berth has, held to the Factory contract (factory-suite.ts). */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { after } from 'node:test';

import { join } from 'node:path';
import { processesWithEnv } from '../helpers/processes.js';
import { isEndedState, SlurmCli } from '../../src/factories/slurm/slurm-cli.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';
import { FACTORY, factoryConformance, type FactorySubject } from './factory-suite.js';
import { scratchDir } from '../helpers/scratch.js';

factoryConformance({
  kind: 'local',
  longCommand: ['sleep', '300'],
  quickCommand: ['true'],
  outputCommand: ['sh', '-c', 'echo hello; exit 3'],
  // A worker vanishes when the agent host that runs it dies unannounced: its job's process
  // group is left behind, and only destroy (from the pid in the worker's handle) can end it.
  async loseWorker() {
    const { execFileSync } = await import('node:child_process');
    const pids = execFileSync('pgrep', ['-P', String(process.pid), '-f', 'host-main'], { encoding: 'utf8' })
      .trim()
      .split('\n');
    for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
  },
  leftovers(dataDir, workerId) {
    const workdir = join(dataDir, 'workers', String(workerId));
    return [
      ...(existsSync(workdir) ? [`working directory ${workdir}`] : []),
      ...processesWithEnv((v) => v === `BERTH_WORKDIR=${workdir}`).map(
        (pid) => `process ${pid} in ${workdir}`,
      ),
    ];
  },
});

factoryConformance({
  kind: 'simulated',
  longCommand: ['sleep', '300'],
  quickCommand: ['true'],
  // A simulated worker lives only in the factory's memory: destroying it from outside is the one
  // way to make it vanish. Its run then stops without a report, as a dead agent's would.
  async loseWorker({ factory, workerId, handle }) {
    await factory.destroy(workerId, handle);
  },
  // Nothing outside the server's process: a simulated worker leaves nothing behind by design.
  leftovers: () => [],
});

// Real Slurm (scripts/slurm/cluster.sh: slurmctld and three slurmd on this machine); SLURM_CONF
// reaches the servers through the environment. Both kinds of worker: a Slurm job running
// `berth agent`, and a direct worker (`sharedDir`) whose batch script runs the job itself.
const slurm = new SlurmCli();

/**
 * Whether a Slurm job name is that of worker `workerId` of this run's factory (whatever the
 * installation: the factory's name is this test process's own).
 */
const ofWorker = (name: string, workerId: number) => name.endsWith(`-${FACTORY}-w${workerId}`);

/** What is left in Slurm of worker `workerId`: its job, if it still runs. */
async function slurmLeftovers(workerId: number): Promise<string[]> {
  return (await slurm.jobs({ namePrefix: 'berth-' }))
    .filter((j) => ofWorker(j.name, workerId) && !isEndedState(j.state))
    .map((j) => `Slurm job ${j.id} (${j.name}) ${j.state}`);
}

function slurmSubject(
  fields: Record<string, unknown>,
  more: Pick<FactorySubject, 'leftovers' | 'gangs'>,
): FactorySubject {
  return {
    kind: 'slurm',
    fields: { partition: 'main', timeLimit: '10m', pollSeconds: 0.5, ...fields },
    adopts: true,
    skip: slurmSkip(),
    async setUp() {
      Object.assign(process.env, (await startSlurm()).env);
    },
    longCommand: ['sleep', '300'],
    quickCommand: ['true'],
    outputCommand: ['sh', '-c', 'echo hello; exit 3'],
    // Cancelled from outside, as an admin's scancel or a node's failure would end it.
    async loseWorker({ handle }) {
      await slurm.cancel(String(handle?.slurmJobId));
    },
    ...more,
  };
}

factoryConformance(
  slurmSubject(
    {},
    {
      async leftovers(_dataDir, workerId) {
        return [
          ...(await slurmLeftovers(workerId)),
          // The agent passes Slurm's variables on to the job: its processes carry the job's name.
          ...processesWithEnv((v) => v.startsWith('SLURM_JOB_NAME=') && ofWorker(v, workerId)).map(
            (pid) => `process ${pid} of worker ${workerId}`,
          ),
        ];
      },
    },
  ),
);

const shared = scratchDir('berth-conformance-shared-');
after(() => rmSync(shared, { recursive: true, force: true }));
factoryConformance(
  slurmSubject(
    { sharedDir: shared },
    {
      gangs: false,
      async leftovers(_dataDir, workerId) {
        const mine = new RegExp(`-${FACTORY}-w${workerId}(\\.|$)`);
        return [
          ...(await slurmLeftovers(workerId)),
          ...readdirSync(shared)
            .filter((f) => mine.test(f))
            .map((f) => `${join(shared, f)} in the shared directory`),
        ];
      },
    },
  ),
);
