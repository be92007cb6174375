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

/** Whether process `pid` still exists (signal 0 tests without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
