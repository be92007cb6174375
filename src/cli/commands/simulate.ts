/**
 * `berth simulate CONFIG`: replays a scheduler-performance scenario locally on a virtual clock;
 * `--from-server`, the live cluster (simulate-live.ts); `--swf FILE`, a workload trace (simulate-swf.ts).
 */
import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { ConfigError } from '../../domain/errors.js';
import { dictionary } from '../../domain/names.js';
import { CliError, UsageError } from '../errors.js';
import { nonNegativeInteger, positiveInteger } from '../flags.js';
import { QUEUEING_STRATEGIES, RUNTIME_ESTIMATES } from '../../domain/cluster-queue.js';
import { collect, runLiveWhatIf, type LiveFlags } from './simulate-live.js';
import { runSwf, type SwfFlags } from './simulate-swf.js';
import { clientCommand, examples, printer } from '../session.js';

interface SimulateFlags extends LiveFlags, SwfFlags {
  fromServer?: boolean;
  admissionLatency?: number;
  swf?: string;
}

/** `--quota cq=30`, repeatable → `{cq: 30}` (a scenario's queue classes). */
function classValues(flag: string, values: string[] | undefined): Record<string, number> | undefined {
  if (values === undefined) return undefined;
  const out = dictionary<number>();
  for (const value of values) {
    const m = /^\s*([^=\s]+)\s*=\s*(\d+)\s*$/.exec(value);
    if (!m?.[1] || !m[2])
      throw new UsageError(`${flag} ${value}: expected CLASS=N (a queue class and whole units)`);
    const n = Number(m[2]);
    if (!Number.isSafeInteger(n)) throw new UsageError(`${flag} ${value}: ${m[2]} is too large`);
    if (Object.hasOwn(out, m[1])) throw new UsageError(`${flag}: ${m[1]} is given twice`);
    out[m[1]] = n;
  }
  return out;
}

function readScenario(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new CliError(
      `cannot read scenario ${file}: ${code === 'ENOENT' ? 'no such file' : (code ?? String(e))}`,
    );
  }
}

export function registerSimulateCommand(program: Command): void {
  examples(
    clientCommand(
      program,
      'simulate [config]',
      "replay a scheduler-performance scenario (Kueue's generator.yaml shape), or the live cluster (--from-server), on berth's scheduler, locally, on a virtual clock",
    )
      .option(
        '--from-server',
        "what if, on the live cluster: replay the server's queues, running and pending jobs, as they are and with the change",
      )
      .option(
        '--quota <class=n|queue:resource=amount>',
        'what if: nominal quota of every queue of queue class CLASS; with --from-server, of cluster queue QUEUE (repeatable)',
        collect,
      )
      .option(
        '--borrowing-limit <class=n|queue:resource=amount>',
        'what if: borrowing limit of queue class CLASS; with --from-server, of cluster queue QUEUE (repeatable)',
        collect,
      )
      .option(
        '--weight <project=w>',
        "with --from-server, what if: project's fair-share weight (repeatable)",
        collect,
      )
      .option(
        '--cohort <queue=cohort>',
        'with --from-server, what if: the cohort cluster queue QUEUE belongs to (QUEUE= for none; repeatable)',
        collect,
      )
      .addOption(
        new Option('--limit <n>', 'with --from-server: pending jobs listed at most')
          .argParser(positiveInteger)
          .default(20),
      )
      .option(
        '--swf <file>',
        "replay a Standard Workload Format trace (the Parallel Workloads Archive's format; .gz read through gunzip) on one queue",
      )
      .addOption(
        new Option(
          '--procs <n>',
          "with --swf: the machine's processors (default: the trace's MaxProcs)",
        ).argParser(positiveInteger),
      )
      .addOption(
        new Option(
          '--strategy <strategy>',
          "with --swf: the queue's queueing strategy (default Backfill)",
        ).choices(QUEUEING_STRATEGIES),
      )
      .addOption(
        new Option(
          '--estimates <estimates>',
          "with --swf: what Backfill plans with, the requested times (default) or also the runtimes learned from each user's jobs",
        ).choices(RUNTIME_ESTIMATES),
      )
      .option(
        '--reservations <n>',
        'with --swf: how many reservations a Backfill pass keeps (default 1, EASY; more: conservative backfilling)',
        positiveInteger,
      )
      .option('--records <file>', 'with --swf: write one CSV line per job (id,submit,start,end,procs)')
      .option(
        '--admission-latency <ms>',
        "virtual ms from an admit decision to the workload running (models the server's pipeline; default 0)",
        nonNegativeInteger,
      )
      .addHelpText(
        'after',
        `
With a scenario file, needs no server. The scenario's queues, cohorts and workloads go through berth's own scheduler;
the store, HTTP and workers are not modelled (see docs/SIMULATION.md). Figures are reported as
Kueue's scheduler-performance recorder does: wall time, average usage per queue class in % of
nominal, and per workload class the average time to admission and to finish, and evictions.`,
      ),
    [
      'berth simulate bench/kueue/baseline.yaml',
      'berth simulate bench/kueue/baseline.yaml --quota cq=30',
      'berth simulate bench/kueue/baseline.yaml --borrowing-limit cq=0 -o json',
      'berth simulate --from-server --quota default:cpu=16',
      'berth simulate --from-server --weight ml=2 --cohort gpu=shared',
      'berth simulate --swf bench/data/KTH-SP2.swf.gz --strategy Backfill --records runs.csv',
    ],
  ).action(async (file: string | undefined, f: SimulateFlags) => {
    const swfOnly = (['procs', 'strategy', 'estimates', 'reservations', 'records'] as const).find(
      (k) => f[k] !== undefined,
    );
    if (f.swf !== undefined) {
      if (file !== undefined || f.fromServer)
        throw new UsageError('give --swf alone, not with a scenario or --from-server');
      const other = (['quota', 'borrowingLimit', 'weight', 'cohort', 'admissionLatency'] as const).find(
        (k) => f[k] !== undefined,
      );
      if (other !== undefined)
        throw new UsageError(
          `--${other.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} does not apply to --swf`,
        );
      return runSwf(f.swf, f);
    }
    if (swfOnly !== undefined) throw new UsageError(`--${swfOnly} needs --swf`);
    if (f.fromServer) {
      if (file !== undefined) throw new UsageError('give a scenario file or --from-server, not both');
      if (f.admissionLatency !== undefined)
        throw new UsageError('--admission-latency applies to a scenario file, not to --from-server');
      return runLiveWhatIf(f);
    }
    if (file === undefined)
      throw new UsageError('give a scenario file, or --from-server for the live cluster');
    for (const flag of ['weight', 'cohort'] as const)
      if (f[flag] !== undefined) throw new UsageError(`--${flag} needs --from-server`);
    const quota = classValues('--quota', f.quota);
    const borrowingLimit = classValues('--borrowing-limit', f.borrowingLimit);
    // Loaded here so that other commands do not pay for the scheduler's modules.
    const { parseScenario, expandScenario } = await import('../../simulate/scenario.js');
    const { overrideQueueClasses } = await import('../../simulate/overrides.js');
    const { simulate } = await import('../../simulate/simulator.js');
    const { formatReport } = await import('../simulate-report.js');
    const out = printer(f);
    let cfg;
    try {
      cfg = parseScenario(readScenario(file), file);
    } catch (e) {
      if (e instanceof ConfigError) throw new CliError(`invalid scenario: ${e.message}`);
      throw e;
    }
    const overrides = [
      ['--quota', 'nominalQuota', quota],
      ['--borrowing-limit', 'borrowingLimit', borrowingLimit],
    ] as const;
    for (const [flag, field, values] of overrides) {
      if (values === undefined) continue;
      try {
        cfg = overrideQueueClasses(cfg, field, values);
      } catch (e) {
        throw new UsageError(`${flag}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    const plan = expandScenario(cfg);
    const result = simulate(plan, {
      admissionLatencyMs: f.admissionLatency ?? 0,
      onProgress: (p) =>
        process.stderr.write(
          `simulating: virtual time ${(p.now / 1000).toFixed(1)} s, ${p.created}/${p.total} created, ${p.finished} finished\n`,
        ),
    });
    const whatIf = [
      ...Object.entries(quota ?? {}).map(([c, n]) => `quota ${c}=${n}`),
      ...Object.entries(borrowingLimit ?? {}).map(([c, n]) => `borrowing limit ${c}=${n}`),
      ...(f.admissionLatency ? [`admission latency ${f.admissionLatency} ms`] : []),
    ];
    out.show(
      {
        scenario: file,
        queues: plan.queues.length,
        cohorts: plan.cohorts.length,
        resource: plan.resource,
        overrides: { quota: quota ?? {}, borrowingLimit: borrowingLimit ?? {} },
        admissionLatencyMs: f.admissionLatency ?? 0,
        report: result.report,
        elapsedMs: Math.round(result.elapsedMs),
        passes: result.passes,
      },
      () =>
        [
          `simulated ${file}: ${plan.queues.length} queues in ${plan.cohorts.length} cohorts, ${plan.workloads.length} workloads (${plan.resource})`,
          ...(whatIf.length > 0 ? [`what if: ${whatIf.join(', ')}`] : []),
          '',
          formatReport(result.report, plan.resource),
          '',
          `simulated in ${(result.elapsedMs / 1000).toFixed(2)} s (${result.passes} scheduling passes)`,
        ].join('\n'),
    );
  });
}
