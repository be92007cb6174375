/**
 * `npm run bench -- slurm`: no-op jobs through berth's slurm factory against the same jobs given
 * to Slurm directly, on the project's own cluster (scripts/slurm/cluster.sh: three nodes of two
 * CPUs on this machine), alternating, several rounds:
 *
 *   plain   `sbatch --wrap true` for every job, as fast as Slurm takes them; done when Slurm has
 *           ended them all
 *   node    the same with `node -e 0`: what any agent written for Node.js costs per Slurm job,
 *           on this machine, where the nodes share the server's two cores
 *   one     berth, one Slurm job per berth job (capacity = the cluster's CPUs)
 *   pilots  berth, pilot workers (`reuse: true`): one Slurm job runs many berth jobs
 *
 * Targets (issue #13): one ≤ 1.25× plain's wall time; pilots ≥ 5× plain's throughput. The agents
 * run the built CLI (dist/), as an installed berth does, not the TypeScript sources.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { isEndedState, SlurmCli } from '../src/factories/slurm/slurm-cli.js';
import { startSlurm } from '../test/helpers/slurm.js';
import { fmt, get, pool, post, startBenchServer } from './lib.js';

const run = promisify(execFile);
const DIST_MAIN = join(import.meta.dirname, '..', 'dist', 'cli', 'main.js');

/** Slots: the test cluster's CPUs (3 nodes × 2). */
const SLOTS = Number(process.env.BENCH_SLURM_SLOTS) || 6;

export interface SlurmBenchRound {
  plainSeconds: number;
  nodeSeconds: number;
  oneSeconds: number;
  pilotSeconds: number;
}

export interface SlurmBenchResult {
  jobs: number;
  slots: number;
  rounds: SlurmBenchRound[];
}

/** Seconds until Slurm has run `n` no-op batch jobs submitted as fast as it takes them. */
export async function plainSlurm(slurm: SlurmCli, n: number, command = 'true'): Promise<number> {
  const name = `bench-plain-${process.pid}-${Date.now()}`;
  const t0 = performance.now();
  const ids: string[] = [];
  await pool(n, 8, async () => {
    const { stdout } = await run('sbatch', [
      '--parsable',
      '--partition=main',
      `--job-name=${name}`,
      '--output=/dev/null',
      `--wrap=${command}`,
    ]);
    ids.push(stdout.trim().split(';')[0]!);
  });
  for (;;) {
    const left = (await slurm.jobs({ namePrefix: name })).filter((j) => !isEndedState(j.state));
    if (left.length === 0) break;
    await delay(50);
  }
  return (performance.now() - t0) / 1000;
}

/** Seconds until a berth server with `target` has run `n` no-op jobs. */
async function throughBerth(n: number, reuse: boolean): Promise<number> {
  const config = [
    'heartbeatSeconds: 30',
    'defaultTarget: hpc',
    'factories:',
    // One Slurm job per berth job: as many as plain sbatch has in Slurm's queue at once, so that
    // Slurm starts each as a CPU frees. Pilots: one per CPU, each running job after job.
    `  hpc: { kind: slurm, partition: main, capacity: ${reuse ? SLOTS : n}, timeLimit: 30m, pollSeconds: 1, agentCommand: ["${process.execPath}", "${DIST_MAIN}"] }`,
    'targets:',
    `  hpc: { factory: hpc${reuse ? ', reuse: true, idleTimeout: 10s' : ''} }`,
  ].join('\n');
  const s = await startBenchServer(config);
  try {
    await post(s.api, s.token, '/cluster-queues', { name: 'bench', quota: { jobs: 1_000_000 } });
    await post(s.api, s.token, '/projects', { name: 'bench', clusterQueue: 'bench' });
    const t0 = performance.now();
    // A timeout, so that pilots may take them (a job without one needs a fresh worker).
    await pool(n, 16, () =>
      post(s.api, s.token, '/projects/bench/jobs', { command: ['true'], timeoutSeconds: 60 }),
    );
    for (;;) {
      const q = await get<{ pending: number; admitted: number }>(s.api, s.token, '/cluster-queues/bench');
      if (q.pending === 0 && q.admitted === 0) break;
      await delay(50);
    }
    const seconds = (performance.now() - t0) / 1000;
    const failed = await get<unknown[]>(s.api, s.token, '/projects/bench/jobs?state=failed&limit=5');
    if (Array.isArray(failed) && failed.length > 0)
      throw new Error(`jobs failed in the benchmark: ${JSON.stringify(failed).slice(0, 500)}`);
    return seconds;
  } finally {
    await s.stop();
  }
}

export async function runSlurmBench(
  n = Number(process.env.BENCH_SLURM_JOBS) || 500,
  rounds = Number(process.env.BENCH_SLURM_ROUNDS) || 3,
): Promise<SlurmBenchResult> {
  if (!existsSync(DIST_MAIN)) throw new Error(`${DIST_MAIN} is missing: run npm run build first`);
  Object.assign(process.env, (await startSlurm()).env);
  const slurm = new SlurmCli();
  const out: SlurmBenchRound[] = [];
  for (let r = 0; r < rounds; r++) {
    const plainSeconds = await plainSlurm(slurm, n);
    const nodeSeconds = await plainSlurm(slurm, n, `${process.execPath} -e 0`);
    const oneSeconds = await throughBerth(n, false);
    const pilotSeconds = await throughBerth(n, true);
    out.push({ plainSeconds, nodeSeconds, oneSeconds, pilotSeconds });
    console.error(
      `  round ${r + 1}: plain ${fmt(plainSeconds, 2)} s, node ${fmt(nodeSeconds, 2)} s, one ${fmt(oneSeconds, 2)} s, pilots ${fmt(pilotSeconds, 2)} s`,
    );
  }
  return { jobs: n, slots: SLOTS, rounds: out };
}

export function printSlurmBench(r: SlurmBenchResult): void {
  const rate = (s: number) => `${fmt(r.jobs / s, 1)}/s`;
  console.log(`  ${fmt(r.jobs)} no-op jobs; pilots: ${r.slots} (one per CPU: 3 nodes × 2 CPUs)`);
  console.log(
    '  round  plain sbatch (true)  sbatch of node -e 0   berth, one Slurm job each          berth, pilots',
  );
  r.rounds.forEach((x, i) => {
    console.log(
      `  ${String(i + 1).padEnd(5)}  ${`${fmt(x.plainSeconds, 2)} s ${rate(x.plainSeconds)}`.padEnd(19)}  ` +
        `${`${fmt(x.nodeSeconds, 2)} s ${rate(x.nodeSeconds)}`.padEnd(20)}  ` +
        `${`${fmt(x.oneSeconds, 2)} s = ${fmt(x.oneSeconds / x.plainSeconds, 2)}× plain (${fmt(x.oneSeconds / x.nodeSeconds, 2)}× node)`.padEnd(33)}  ` +
        `${fmt(x.pilotSeconds, 2)} s = ${fmt(x.plainSeconds / x.pilotSeconds, 2)}× plain's throughput`,
    );
  });
  const worstOne = Math.max(...r.rounds.map((x) => x.oneSeconds / x.plainSeconds));
  const worstPilot = Math.min(...r.rounds.map((x) => x.plainSeconds / x.pilotSeconds));
  console.log(
    `  worst round: one Slurm job each ${fmt(worstOne, 2)}× plain's time (target ≤ 1.25); pilots ${fmt(worstPilot, 2)}× plain's throughput (target ≥ 5)`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) printSlurmBench(await runSlurmBench());
