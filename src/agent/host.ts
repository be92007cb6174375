/**
 * The local agent host: one long-lived Node.js process that runs the agent for every worker of
 * the local factory. Starting Node costs ~65 ms but spawning a process ~1 ms, so one host for
 * all workers keeps the local factory limited by process start-up, not by Node start-up.
 * Each worker still speaks the ordinary agent protocol over HTTP with its own job token.
 *
 * If the server dies, the IPC channel closes and the host kills every job it runs before exiting:
 * nothing is left running that no server knows about.
 *
 * When the server serves HTTPS, the factory names the CA file its agents trust in BERTH_CA (the
 * server's certificate by default); jobs get it too, for the `berth` they may run.
 */
import { removeCgroup } from './cgroups.js';
import type { HostCommand, HostEvent } from './host-protocol.js';
import { trustCa } from './http-post.js';
import { killGroup } from './process-group.js';
import { runJob } from './run-job.js';
import { CA_ENV, readCaFile } from './trust.js';

/** BERTH_CA as the host was started with it, for its jobs' environment. */
let caFile: string | undefined;

/** The process group of each member running here, by worker, then rank. */
const pids = new Map<number, Map<number, number>>();
/** The cgroups of the jobs running here, removed by the factory on destroy — or here on exit. */
const cgroups = new Map<number, string[][]>();

function killWorker(workerId: number): void {
  for (const pid of pids.get(workerId)?.values() ?? []) killGroup(pid, 'SIGKILL');
  pids.delete(workerId);
  cgroups.delete(workerId);
}

function send(e: HostEvent): void {
  // With a callback, a failed send (the server just went away) is not an 'error' event that
  // would crash the host before its disconnect handler stops the jobs.
  if (process.connected) process.send?.(e, undefined, {}, () => {});
}

function start(cmd: Extract<HostCommand, { type: 'start' }>): void {
  const { workerId, rank } = cmd;
  if (cmd.cgroup) cgroups.set(workerId, [...(cgroups.get(workerId) ?? []), cmd.cgroup.dirs]);
  runJob({
    url: cmd.url,
    token: cmd.token,
    workdir: cmd.workdir,
    env: { BERTH_WORKER_ID: String(workerId), ...(caFile ? { [CA_ENV]: caFile } : {}) },
    cgroup: cmd.cgroup,
    rank,
    onSpawn: (pid) => {
      let members = pids.get(workerId);
      if (!members) pids.set(workerId, (members = new Map<number, number>()));
      members.set(rank, pid);
      send({ type: 'spawned', workerId, rank, pid });
    },
    onExit: () => send({ type: 'exited', workerId, rank }),
  }).then(
    (result) => send({ type: 'finished', workerId, rank, result }),
    (err: unknown) =>
      send({ type: 'failed', workerId, rank, message: err instanceof Error ? err.message : String(err) }),
  );
}

/** Trusts BERTH_CA's certificates; a file the server checked at start, so a failure is rare. */
function trustConfiguredCa(): void {
  caFile = process.env[CA_ENV] || undefined;
  if (!caFile) return;
  try {
    trustCa(readCaFile(caFile));
  } catch (e) {
    process.stderr.write(`berth agent host: ${CA_ENV}: ${(e as Error).message}\n`);
    process.exit(1);
  }
}

export function runAgentHost(): void {
  trustConfiguredCa();
  process.on('message', (msg: HostCommand) => {
    if (msg.type === 'start') start(msg);
    else if (msg.type === 'kill') {
      killWorker(msg.workerId);
      send({ type: 'killed', workerId: msg.workerId });
    }
  });
  process.on('disconnect', () => {
    const left = [...cgroups.values()].flat();
    for (const workerId of [...pids.keys()]) killWorker(workerId);
    // No factory is left to remove the jobs' cgroups (a next server would, at its start).
    void Promise.allSettled(left.map((dirs) => removeCgroup(dirs, 2000))).then(() => process.exit(0));
  });
  send({ type: 'ready' });
}
