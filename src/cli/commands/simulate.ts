/** `berth simulate CONFIG`: replays a scheduler-performance scenario locally on a virtual clock. */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { ConfigError } from '../../domain/errors.js';
import { CliError, UsageError } from '../errors.js';
import { nonNegativeInteger } from '../flags.js';
import { clientCommand, examples, printer, type CommonFlags } from '../session.js';

interface SimulateFlags extends CommonFlags {
  quota?: Record<string, number>;
  borrowingLimit?: Record<string, number>;
  admissionLatency?: number;
}

/** `--quota cq=30`, repeatable → `{cq: 30}`. */
function classValue(value: string, previous: Record<string, number> | undefined): Record<string, number> {
  const m = /^\s*([^=\s]+)\s*=\s*(\d+)\s*$/.exec(value);
  if (!m?.[1] || !m[2]) throw new InvalidArgumentError('expected CLASS=N (a queue class and whole units)');
  const n = Number(m[2]);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`${m[2]} is too large`);
  if (previous !== undefined && m[1] in previous) throw new InvalidArgumentError(`${m[1]} is given twice`);
  return { ...previous, [m[1]]: n };
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
      'simulate <config>',
      "replay a scheduler-performance scenario (Kueue's generator.yaml shape) on berth's scheduler, locally, on a virtual clock",
    )
      .option(
        '--quota <class=n>',
        'what if: nominal quota of every queue of queue class CLASS (repeatable)',
        classValue,
      )
      .option(
        '--borrowing-limit <class=n>',
        'what if: borrowing limit of queue class CLASS (repeatable)',
        classValue,
      )
      .option(
        '--admission-latency <ms>',
        "virtual ms from an admit decision to the workload running (models the server's pipeline; default 0)",
        nonNegativeInteger,
      )
      .addHelpText(
        'after',
        `
Needs no server. The scenario's queues, cohorts and workloads go through berth's own scheduler;
the store, HTTP and workers are not modelled (see docs/SIMULATION.md). Figures are reported as
Kueue's scheduler-performance recorder does: wall time, average usage per queue class in % of
nominal, and per workload class the average time to admission and to finish, and evictions.`,
      ),
    [
      'berth simulate bench/kueue/baseline.yaml',
      'berth simulate bench/kueue/baseline.yaml --quota cq=30',
      'berth simulate bench/kueue/baseline.yaml --borrowing-limit cq=0 -o json',
    ],
  ).action(async (file: string, f: SimulateFlags) => {
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
      ['--quota', 'nominalQuota', f.quota],
      ['--borrowing-limit', 'borrowingLimit', f.borrowingLimit],
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
      ...Object.entries(f.quota ?? {}).map(([c, n]) => `quota ${c}=${n}`),
      ...Object.entries(f.borrowingLimit ?? {}).map(([c, n]) => `borrowing limit ${c}=${n}`),
      ...(f.admissionLatency ? [`admission latency ${f.admissionLatency} ms`] : []),
    ];
    out.show(
      {
        scenario: file,
        queues: plan.queues.length,
        cohorts: plan.cohorts.length,
        resource: plan.resource,
        overrides: { quota: f.quota ?? {}, borrowingLimit: f.borrowingLimit ?? {} },
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
          formatReport(result.report),
          '',
          `simulated in ${(result.elapsedMs / 1000).toFixed(2)} s (${result.passes} scheduling passes)`,
        ].join('\n'),
    );
  });
}
