/**
 * `berth simulate --swf FILE`: a Standard Workload Format trace replayed on berth's scheduler
 * with a virtual clock (simulate/swf.ts), e.g. a log of the Parallel Workloads Archive. A file
 * ending in .gz is read through gunzip.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { QueueingStrategy, RuntimeEstimates } from '../../domain/cluster-queue.js';
import { CliError, UsageError } from '../errors.js';
import { printer, type CommonFlags } from '../session.js';

export interface SwfFlags extends CommonFlags {
  procs?: number;
  strategy?: QueueingStrategy;
  estimates?: RuntimeEstimates;
  reservations?: number;
  records?: string;
}

/** Reads a trace, gunzipping a .gz file. */
export function readSwfText(file: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new CliError(
      `cannot read trace ${file}: ${code === 'ENOENT' ? 'no such file' : (code ?? String(e))}`,
    );
  }
  try {
    return (file.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8');
  } catch (e) {
    throw new CliError(`cannot read trace ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

const secs = (s: number) => `${Math.round(s).toLocaleString('en-US')} s`;

export async function runSwf(file: string, f: SwfFlags): Promise<void> {
  // Loaded here so that other commands do not pay for the scheduler's modules.
  const { parseSwf, replaySwf, swfCsv, BSLD_TAU } = await import('../../simulate/swf.js');
  let replay;
  try {
    replay = replaySwf(parseSwf(readSwfText(file)), {
      ...(f.procs === undefined ? {} : { procs: f.procs }),
      ...(f.strategy === undefined ? {} : { strategy: f.strategy }),
      ...(f.estimates === undefined ? {} : { estimates: f.estimates }),
      ...(f.reservations === undefined ? {} : { reservations: f.reservations }),
    });
  } catch (e) {
    if (e instanceof RangeError) throw new UsageError(`${file}: ${e.message}`);
    throw e;
  }
  if (f.records !== undefined) writeFileSync(f.records, swfCsv(replay.runs));
  const s = replay.summary;
  const strategy = f.strategy ?? 'Backfill';
  const estimates = f.estimates ?? 'requested';
  printer(f).show(
    {
      trace: file,
      procs: replay.procs,
      strategy,
      estimates,
      reservations: f.reservations ?? 1,
      ...s,
      simulationSeconds: replay.elapsedMs / 1000,
    },
    () =>
      [
        `replayed ${file}: ${s.jobs.toLocaleString('en-US')} jobs (${s.skipped} records skipped) on ${replay.procs} processors, ${strategy}${estimates === 'learned' ? ' with learned estimates' : ''}${(f.reservations ?? 1) > 1 ? `, ${f.reservations} reservations` : ''}`,
        `wait: average ${secs(s.avgWait)}, max ${secs(s.maxWait)}`,
        `average bounded slowdown (τ = ${BSLD_TAU} s): ${s.avgBoundedSlowdown.toFixed(1)}`,
        `utilization: ${(s.utilization * 100).toFixed(1)} %`,
        `simulated in ${(replay.elapsedMs / 1000).toFixed(2)} s`,
      ].join('\n'),
  );
}
