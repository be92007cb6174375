/** Processes on this machine found by their environment (Linux /proc): what a test left running. */
import { readdirSync, readFileSync } from 'node:fs';

/** The pids of processes with an environment variable for which `match` holds. */
export function processesWithEnv(match: (variable: string) => boolean): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').some(match)) pids.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids;
}

/**
 * Whether process `pid` runs: a zombie does not (it runs nothing and holds nothing). A process
 * that left its job is reparented to the machine's init, which may be slow to reap it (or, in a
 * container whose init reaps nothing, never does).
 */
export function alive(pid: number): boolean {
  try {
    return !/^State:\s*Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}
