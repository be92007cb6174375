/**
 * `npm run bench -- slurm`: no-op jobs through berth's slurm factory against the same jobs given
 * to Slurm directly, on the project's own cluster (scripts/slurm/cluster.sh: three nodes of two
 * CPUs on this machine), in turn, several rounds:
 *
 *   plain   `sbatch --wrap true` for every job, as fast as Slurm takes them; done when Slurm has
 *           ended them all
 *   node    the same with `node -e 0`: what any agent written for Node.js costs per Slurm job,
 *           on this machine, where the nodes share the server's two cores
 *   one     berth, one Slurm job per berth job, each running `berth agent`
 *   direct  berth, one Slurm job per berth job, direct workers (`sharedDir`): no agent
 *   pilots  berth, pilot workers (`reuse: true`): one Slurm job runs many berth jobs; cold (the
 *           batch starts them) and warm (the next batch, on the same pilots, idle by then)
 *
 * Targets (issue #13): one Slurm job each ≤ 1.25× plain's wall time; pilots ≥ 5× plain's
 * throughput. The agents run the built CLI (dist/), as an installed berth does. BENCH_SLURM_JOBS,
 * BENCH_SLURM_ROUNDS; BENCH_SLURM_QUICK=1 leaves out `node` and `one`; BENCH_PROFILE=DIR profiles
 * the server and every agent.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { isEndedState, SlurmCli } from '../src/factories/slurm/slurm-cli.js';
import { startSlurm } from '../test/helpers/slurm.js';
import { fmt, get, machineCpuSeconds, pool, post, startBenchServer, type BenchServer } from './lib.js';

const run = promisify(execFile);
const DIST_MAIN = join(import.meta.dirname, '..', 'dist', 'cli', 'main.js');

/** Slots: the test cluster's CPUs (3 nodes × 2). */
const SLOTS = Number(process.env.BENCH_SLURM_SLOTS) || 6;

export interface SlurmBenchRound {
  plainSeconds: number;
  nodeSeconds: number;
  oneSeconds: number;
  /** One Slurm job per berth job, direct workers (sharedDir): no agent, the script runs the job. */
  directSeconds: number;
  /** The server's CPU seconds in the direct run. */
  directServerCpu: number;
  /** Pilots started by this batch. */
  pilotColdSeconds: number;
  /** The next batch, on the same pilots, idle by then. */
  pilotWarmSeconds: number;
  /** The server's CPU seconds in the warm batch. */
  pilotWarmServerCpu: number;
  /** How busy the machine's CPUs were in the warm batch (0–1). */
  pilotWarmBusy: number;
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

/** How a node starts `berth agent`: the built CLI; with BENCH_PROFILE, each agent profiled there. */
function agentCommand(): string[] {
  const dir = process.env.BENCH_PROFILE;
  return [process.execPath, ...(dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}/agents`] : []), DIST_MAIN];
}

/** A berth server's run of `n` no-op jobs: seconds, and the server's CPU seconds meanwhile. */
interface BerthRun {
  seconds: number;
  serverCpu: number;
  /** How busy the whole machine was meanwhile (0–1: its CPUs' busy share). */
  machineBusy: number;
}

/** Submits `n` no-op jobs to a running bench server and waits until the queue is empty. */
async function runBatch(s: BenchServer, n: number): Promise<BerthRun> {
  const cpu0 = s.cpuSeconds();
  const machine0 = machineCpuSeconds();
  const t0 = performance.now();
  // A timeout, so that pilots may take them (a job without one needs a fresh worker).
  await pool(n, 16, () =>
    post(s.api, s.token, '/projects/bench/jobs', { command: ['true'], timeoutSeconds: 60 }),
  );
  for (;;) {
    const q = await get<{ pending: number; admitted: number }>(s.api, s.token, '/cluster-queues/bench');
    if (q.pending === 0 && q.admitted === 0) break;
    await delay(20);
  }
  const seconds = (performance.now() - t0) / 1000;
  const failed = await get<unknown[]>(s.api, s.token, '/projects/bench/jobs?state=failed&limit=5');
  if (Array.isArray(failed) && failed.length > 0)
    throw new Error(`jobs failed in the benchmark: ${JSON.stringify(failed).slice(0, 500)}`);
  const machine = machineCpuSeconds();
  return {
    seconds,
    serverCpu: s.cpuSeconds() - cpu0,
    machineBusy: (machine.busy - machine0.busy) / (machine.all - machine0.all),
  };
}

/**
 * A berth server whose factory makes one Slurm job per berth job (`reuse` false: one run of `n`
 * jobs) or pilots (two runs of `n`: the first starts the pilots, cold; the second finds them
 * idle, warm, as every batch after the first of a stream of work does).
 */
async function throughBerth(n: number, how: 'agent' | 'direct' | 'pilots'): Promise<BerthRun[]> {
  const reuse = how === 'pilots';
  const shared = how === 'direct' ? mkdtempSync(join(tmpdir(), 'berth-bench-shared-')) : undefined;
  const config = [
    'heartbeatSeconds: 30',
    'defaultTarget: hpc',
    'factories:',
    // One Slurm job per berth job: as many as plain sbatch has in Slurm's queue at once, so that
    // Slurm starts each as a CPU frees. Pilots: one per CPU, each running job after job.
    `  hpc: { kind: slurm, partition: main, capacity: ${reuse ? SLOTS : n}, timeLimit: 30m, pollSeconds: 1, agentCommand: ${JSON.stringify(agentCommand())}${shared ? `, sharedDir: ${shared}` : ''} }`,
    'targets:',
    `  hpc: { factory: hpc${reuse ? ', reuse: true, idleTimeout: 60s' : ''} }`,
  ].join('\n');
  const s = await startBenchServer(config);
  try {
    await post(s.api, s.token, '/cluster-queues', { name: 'bench', quota: { jobs: 1_000_000 } });
    await post(s.api, s.token, '/projects', { name: 'bench', clusterQueue: 'bench' });
    const runs = [await runBatch(s, n)];
    if (reuse) runs.push(await runBatch(s, n));
    return runs;
  } finally {
    await s.stop();
    if (shared) rmSync(shared, { recursive: true, force: true });
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
    // BENCH_SLURM_QUICK=1: plain and pilots only, to look at pilots alone.
    const quick = process.env.BENCH_SLURM_QUICK === '1';
    const nodeSeconds = quick ? NaN : await plainSlurm(slurm, n, `${process.execPath} -e 0`);
    const [one] = quick ? [{ seconds: NaN }] : await throughBerth(n, 'agent');
    const [direct] = await throughBerth(n, 'direct');
    const [cold, warm] = await throughBerth(n, 'pilots');
    const x: SlurmBenchRound = {
      plainSeconds,
      nodeSeconds,
      oneSeconds: one.seconds,
      directSeconds: direct!.seconds,
      directServerCpu: direct!.serverCpu,
      pilotColdSeconds: cold!.seconds,
      pilotWarmSeconds: warm!.seconds,
      pilotWarmServerCpu: warm!.serverCpu,
      pilotWarmBusy: warm!.machineBusy,
    };
    out.push(x);
    console.error(
      `  round ${r + 1}: plain ${fmt(plainSeconds, 2)} s, node ${fmt(nodeSeconds, 2)} s, one ${fmt(x.oneSeconds, 2)} s, direct ${fmt(x.directSeconds, 2)} s (server ${fmt(x.directServerCpu, 2)} cpu·s), ` +
        `pilots ${fmt(x.pilotColdSeconds, 2)} s cold, ${fmt(x.pilotWarmSeconds, 2)} s warm (server ${fmt(x.pilotWarmServerCpu, 2)} cpu·s, machine ${fmt(x.pilotWarmBusy * 100)} % busy)`,
    );
  }
  return { jobs: n, slots: SLOTS, rounds: out };
}

export function printSlurmBench(r: SlurmBenchResult): void {
  const rate = (s: number) => `${fmt(r.jobs / s, 1)}/s`;
  console.log(`  ${fmt(r.jobs)} no-op jobs; pilots: ${r.slots} (one per CPU: 3 nodes × 2 CPUs)`);
  const rows: string[][] = [
    [
      'round',
      'plain sbatch (true)',
      'sbatch of node -e 0',
      'one Slurm job each, berth agent',
      'one Slurm job each, direct',
      'pilots, cold (they start)',
      'pilots, warm (idle, as after the first batch)',
    ],
  ];
  r.rounds.forEach((x, i) => {
    const time = (s: number) => `${fmt(s, 2)} s = ${fmt(s / x.plainSeconds, 2)}× plain`;
    const throughput = (s: number) => `${fmt(s, 2)} s = ${fmt(x.plainSeconds / s, 2)}× plain's throughput`;
    rows.push([
      String(i + 1),
      `${fmt(x.plainSeconds, 2)} s ${rate(x.plainSeconds)}`,
      `${fmt(x.nodeSeconds, 2)} s ${rate(x.nodeSeconds)}`,
      `${time(x.oneSeconds)} (${fmt(x.oneSeconds / x.nodeSeconds, 2)}× node)`,
      `${time(x.directSeconds)} (server ${fmt((x.directServerCpu * 1000) / r.jobs, 2)} ms CPU per job)`,
      throughput(x.pilotColdSeconds),
      `${throughput(x.pilotWarmSeconds)} (${rate(x.pilotWarmSeconds)}; server ${fmt((x.pilotWarmServerCpu * 1000) / r.jobs, 2)} ms CPU per job; machine ${fmt(x.pilotWarmBusy * 100)} % busy)`,
    ]);
  });
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  for (const row of rows) console.log(`  ${row.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}`);
  const worst = (f: (x: SlurmBenchRound) => number) => Math.max(...r.rounds.map(f));
  const least = (f: (x: SlurmBenchRound) => number) => Math.min(...r.rounds.map(f));
  console.log(
    `  worst round: one Slurm job each ${fmt(
      worst((x) => x.directSeconds / x.plainSeconds),
      2,
    )}× plain's time direct, ` +
      `${fmt(
        worst((x) => x.oneSeconds / x.plainSeconds),
        2,
      )}× with berth agent (target ≤ 1.25); ` +
      `pilots ${fmt(
        least((x) => x.plainSeconds / x.pilotWarmSeconds),
        2,
      )}× plain's throughput warm, ` +
      `${fmt(
        least((x) => x.plainSeconds / x.pilotColdSeconds),
        2,
      )}× cold (target ≥ 5)`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) printSlurmBench(await runSlurmBench());
