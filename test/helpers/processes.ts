/** Processes on this machine found by their environment (Linux /proc): what a test left running. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import assert from 'node:assert/strict';

/** The pids of processes with an environment variable for which `match` holds (every one, with several). */
export function processesWithEnv(...match: ((variable: string) => boolean)[]): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0');
      if (match.every((m) => env.some(m))) pids.push(Number(entry));
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

/**
 * The host's pids of the processes job `jobId` reported by the numbers it sees (`$$`, `$!`): in
 * namespaces of its own (docs/SECURITY.md) a job sees its pid namespace's numbers, which outside
 * are other processes (2 is the kernel's kthreadd). Found by the innermost number of each
 * process's `NSpid:` line (/proc/PID/status) among the job's processes (`jobProcesses`); a job without namespaces sees the host's numbers, kept as they are. Call it while
 * the processes run: a number not found (a process gone already) is left out.
 */
export function hostPids(server: JobServer, jobId: number, pids: number[]): number[] {
  // Inner number → the host's numbers of the processes that have it (a gang's members each have
  // a namespace of their own, and each its pid 2).
  const inner = new Map<number, number[]>();
  let namespaced = false;
  for (const pid of jobProcesses(server, jobId)) {
    try {
      const ns = /^NSpid:\s*(.*)$/m
        .exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
        ?.trim()
        .split(/\s+/);
      if (!ns || ns.length < 2) continue;
      namespaced = true;
      const n = Number(ns.at(-1));
      inner.set(n, [...(inner.get(n) ?? []), pid]);
    } catch {
      // gone meanwhile
    }
  }
  if (!namespaced) return pids;
  return [...new Set(pids)].flatMap((p) => inner.get(p) ?? []);
}

/** Which server's job: its URL, which the job's BERTH_URL names (job ids repeat across servers). */
export interface JobServer {
  url: string;
}

/** The running processes (not zombies) of job `jobId` of `server`, by their environment. */
export function jobProcesses(server: JobServer, jobId: number): number[] {
  return processesWithEnv(
    (v) => v === `BERTH_JOB_ID=${jobId}`,
    (v) => v === `BERTH_URL=${server.url}`,
  ).filter(alive);
}

/**
 * The pid of the local factory's agent host (agent/host-main.ts) of a server running in this test
 * process: the one process that runs every local job's agent. Stopped with SIGSTOP, it is a frozen
 * agent: no heartbeat, no report, its jobs' exits left unread until SIGCONT.
 */
export function agentHost(): number {
  const pids = execFileSync('pgrep', ['-P', String(process.pid), '-f', 'host-main'], { encoding: 'utf8' })
    .trim()
    .split('\n');
  assert.equal(pids.length, 1, 'one agent host');
  return Number(pids[0]);
}

/**
 * A daemon that changes its pid every 2 ms (it forks, and the parent exits), in a session of its
 * own: what a scan of /proc followed by kills by pid never catches. It touches BEACON each hop.
 */
export const HOPPER = [
  // It stops itself when told (BEACON.stop), which the control needs: nothing else can catch it.
  `export HOP='[ -e "$BEACON.stop" ] && exit 0; : > "$BEACON"; sleep 0.002; sh -c "$HOP" </dev/null >/dev/null 2>&1 & exit 0'`,
  'setsid sh -c "$HOP" </dev/null >/dev/null 2>&1 &',
  // It hops before the job ends.
  'i=0; while [ ! -e "$BEACON" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done',
  'echo hopper-started',
].join('\n');
