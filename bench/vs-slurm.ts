/**
 * `npm run bench -- vs-slurm` (issue #18): the same no-op jobs end to end through berth's local
 * factory and through Slurm, with the same number of slots, alternating, several rounds. Slurm is
 * the project's own one-node cluster (scripts/slurm/cluster.sh, tuned for throughput: the
 * scheduler runs on every job's end, no accounting), started in its own directory and ports so
 * that it stands beside the tests' three-node cluster, and stopped at the end.
 *
 *   slurm   `sbatch --wrap true` for every job (8 sbatch in flight); done when Slurm has ended
 *           them all (squeue)
 *   berth   `POST /projects/bench/jobs` for every job (32 in flight), local factory with as many
 *           slots as the Slurm node has CPUs; done when the queue has nothing pending or admitted
 *
 * Target: berth ≥ 3× Slurm's jobs/s in every round, with each job confined as a server started by
 * the README confines it (a uid, cgroups, and namespaces where bubblewrap is there: issue #38).
 * Each round also runs berth with `namespaces: off`, and afterwards both run 200 no-op jobs one at
 * a time on an idle server: running → ended (p50, p99), what a job's sandbox adds to its start and
 * end.
 */
import { SlurmCli } from '../src/factories/slurm/slurm-cli.js';
import { startSlurm, stopSlurm } from '../test/helpers/slurm.js';
import { noopJobsThroughBerth } from './e2e.js';
import { quantile } from './flood.js';
import { fmt } from './lib.js';
import { plainSlurm } from './slurm.js';

const SLOTS = Number(process.env.BENCH_SLOTS) || 2;

/** A one-node cluster beside the tests' own (another directory, other ports). */
const CLUSTER = {
  BERTH_SLURM_NODES: '1',
  BERTH_SLURM_CPUS: String(SLOTS),
  BERTH_SLURM_DIR: '/tmp/berth-slurm-vs',
  BERTH_SLURM_CTLD_PORT: '7017',
  BERTH_SLURM_NODE_PORT_BASE: '7020',
};

export interface VsSlurmRound {
  slurmSeconds: number;
  berthSeconds: number;
  /** The same jobs through berth with `namespaces: off`. */
  unsandboxedSeconds: number;
}

export interface VsSlurmResult {
  jobs: number;
  slots: number;
  rounds: VsSlurmRound[];
  /** Running → ended of a no-op job run alone, in ms: with namespaces (the default), and without. */
  runMs: { sandboxed: number[]; unsandboxed: number[] };
}

/** A job's own run, one at a time after the rounds: enough for a p99. */
const RUN_JOBS = Number(process.env.BENCH_VS_SLURM_RUN_JOBS) || 200;

export async function runVsSlurmBench(
  n = Number(process.env.BENCH_VS_SLURM_JOBS) || 1000,
  rounds = Number(process.env.BENCH_VS_SLURM_ROUNDS) || 3,
): Promise<VsSlurmResult> {
  const previous = process.env.SLURM_CONF;
  Object.assign(process.env, (await startSlurm(CLUSTER)).env);
  try {
    const slurm = new SlurmCli();
    const out: VsSlurmRound[] = [];
    for (let r = 0; r < rounds; r++) {
      // Alternate which goes first, so that neither always runs on a warmer machine.
      const first = r % 2 === 0 ? 'slurm' : 'berth';
      const round: Partial<VsSlurmRound> = {};
      for (const who of first === 'slurm' ? ['slurm', 'berth'] : ['berth', 'slurm'])
        if (who === 'slurm') round.slurmSeconds = await plainSlurm(slurm, n);
        else {
          round.berthSeconds = (await noopJobsThroughBerth(n, SLOTS)).seconds;
          round.unsandboxedSeconds = (await noopJobsThroughBerth(n, SLOTS, 0, ', namespaces: off')).seconds;
        }
      const x = round as VsSlurmRound;
      out.push(x);
      console.error(
        `  round ${r + 1}: slurm ${fmt(x.slurmSeconds, 2)} s, berth ${fmt(x.berthSeconds, 2)} s = ${fmt(x.slurmSeconds / x.berthSeconds, 2)}× (namespaces off: ${fmt(x.unsandboxedSeconds, 2)} s)`,
      );
    }
    const runMs = {
      sandboxed: (await noopJobsThroughBerth(0, SLOTS, 0, '', RUN_JOBS)).runMs,
      unsandboxed: (await noopJobsThroughBerth(0, SLOTS, 0, ', namespaces: off', RUN_JOBS)).runMs,
    };
    return { jobs: n, slots: SLOTS, rounds: out, runMs };
  } finally {
    await stopSlurm(CLUSTER);
    if (previous === undefined) delete process.env.SLURM_CONF;
    else process.env.SLURM_CONF = previous;
  }
}

export function printVsSlurmBench(r: VsSlurmResult): void {
  const rate = (s: number) => `${fmt(r.jobs / s, 1)} jobs/s`;
  console.log(
    `  ${fmt(r.jobs)} no-op jobs, ${r.slots} slots (one Slurm node of ${r.slots} CPUs; local factory capacity ${r.slots})`,
  );
  console.log(
    '  round  Slurm (sbatch)              berth (local factory)       berth / Slurm   berth, namespaces off',
  );
  r.rounds.forEach((x, i) =>
    console.log(
      `  ${String(i + 1).padEnd(5)}  ${`${fmt(x.slurmSeconds, 2)} s ${rate(x.slurmSeconds)}`.padEnd(26)}  ` +
        `${`${fmt(x.berthSeconds, 2)} s ${rate(x.berthSeconds)}`.padEnd(26)}  ${`${fmt(x.slurmSeconds / x.berthSeconds, 2)}×`.padEnd(14)}  ` +
        `${rate(x.unsandboxedSeconds)} (${fmt(x.slurmSeconds / x.unsandboxedSeconds, 2)}×)`,
    ),
  );
  const worst = Math.min(...r.rounds.map((x) => x.slurmSeconds / x.berthSeconds));
  console.log(`  worst round: berth ${fmt(worst, 2)}× Slurm's rate (target ≥ 3)`);
  const q = (xs: number[], p: number) => fmt(quantile(xs, p), 0);
  const { sandboxed, unsandboxed } = r.runMs;
  console.log(
    `  a no-op job alone, running → ended (${sandboxed.length} each): namespaces p50 ${q(sandboxed, 0.5)} ms, p99 ${q(sandboxed, 0.99)} ms; ` +
      `off p50 ${q(unsandboxed, 0.5)} ms, p99 ${q(unsandboxed, 0.99)} ms: the sandbox adds ${fmt(quantile(sandboxed, 0.5) - quantile(unsandboxed, 0.5), 0)} ms at the median`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) printVsSlurmBench(await runVsSlurmBench());
