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
import { HostExecs, type RunningMember } from './host-exec.js';
import type { HostCommand, HostEvent } from './host-protocol.js';
import { trustCa } from './http-post.js';
import { endProcesses, type JobIdentity } from './identity.js';
import type { HeldTerminal } from './job-terminal.js';
import { killGroup } from './process-group.js';
import { runJob } from './run-job.js';
import { CA_ENV, readCaFile } from './trust.js';

/** BERTH_CA as the host was started with it, for its jobs' environment. */
let caFile: string | undefined;

/** The process group of each member running here, by worker, then rank. */
const pids = new Map<number, Map<number, number>>();
/** The cgroups of the jobs running here, removed by the factory on destroy — or here on exit. */
const cgroups = new Map<number, string[][]>();
/** The uids the members of each worker run under, when the factory isolates its jobs. */
const identities = new Map<number, JobIdentity[]>();
/** Each member as it runs, by worker, then rank: what `berth exec` enters. */
const running = new Map<number, Map<number, RunningMember>>();
/** Each interactive job's terminal, by worker (rank 0: such a job has one member): what `berth attach` takes. */
const terminals = new Map<number, HeldTerminal>();

/**
 * Kills every member's process group, then every process left under the members' uids (one that
 * left its group: `setsid`, a double fork); resolves whether none is left.
 */
async function killWorker(workerId: number): Promise<boolean> {
  for (const pid of pids.get(workerId)?.values() ?? []) killGroup(pid, 'SIGKILL');
  pids.delete(workerId);
  running.delete(workerId);
  terminals.delete(workerId);
  cgroups.delete(workerId);
  const ids = identities.get(workerId) ?? [];
  identities.delete(workerId);
  const ended = await Promise.all(ids.map((id) => endProcesses(id)));
  return ended.every(Boolean);
}

function send(e: HostEvent): void {
  // With a callback, a failed send (the server just went away) is not an 'error' event that
  // would crash the host before its disconnect handler stops the jobs.
  if (process.connected) process.send?.(e, undefined, {}, () => {});
}

const execs = new HostExecs(send);

function start(cmd: Extract<HostCommand, { type: 'start' }>): void {
  const { workerId, rank } = cmd;
  if (cmd.cgroup) cgroups.set(workerId, [...(cgroups.get(workerId) ?? []), cmd.cgroup.dirs]);
  if (cmd.identity) identities.set(workerId, [...(identities.get(workerId) ?? []), cmd.identity]);
  runJob({
    url: cmd.url,
    token: cmd.token,
    workdir: cmd.workdir,
    env: { ...cmd.env, BERTH_WORKER_ID: String(workerId), ...(caFile ? { [CA_ENV]: caFile } : {}) },
    cgroup: cmd.cgroup,
    ...(cmd.identity ? { identity: cmd.identity } : {}),
    ...(cmd.sandbox ? { sandbox: cmd.sandbox } : {}),
    ...(cmd.image ? { image: cmd.image } : {}),
    abandoned: () => !process.connected,
    rank,
    onTerminal: (held) => void terminals.set(workerId, held),
    onSpawn: (pid, job) => {
      let members = pids.get(workerId);
      if (!members) pids.set(workerId, (members = new Map<number, number>()));
      members.set(rank, pid);
      let runs = running.get(workerId);
      if (!runs) running.set(workerId, (runs = new Map<number, RunningMember>()));
      runs.set(rank, {
        running: job,
        ...(cmd.identity ? { identity: cmd.identity } : {}),
        ...(cmd.cgroup ? { cgroup: cmd.cgroup } : {}),
      });
      send({ type: 'spawned', workerId, rank, pid });
    },
    onExit: (clean) => {
      running.get(workerId)?.delete(rank);
      terminals.delete(workerId);
      // Nothing of this member's uid is left to end when the worker is killed.
      if (clean && cmd.identity) {
        const left = identities.get(workerId)?.filter((id) => id.uid !== cmd.identity!.uid);
        if (left?.length) identities.set(workerId, left);
        else identities.delete(workerId);
      }
      send({ type: 'exited', workerId, rank, clean });
    },
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
    else if (msg.type === 'kill')
      void killWorker(msg.workerId).then((clean) => send({ type: 'killed', workerId: msg.workerId, clean }));
    else
      execs.handle(
        msg,
        (workerId, rank) => running.get(workerId)?.get(rank),
        (workerId) => terminals.get(workerId),
      );
  });
  process.on('disconnect', () => {
    execs.killAll();
    const left = [...cgroups.values()].flat();
    const workers = new Set([...pids.keys(), ...identities.keys()]);
    const killed = [...workers].map((workerId) => killWorker(workerId));
    // No factory is left to remove the jobs' cgroups (a next server would, at its start).
    void Promise.allSettled([...killed, ...left.map((dirs) => removeCgroup(dirs, 2000))]).then(() =>
      process.exit(0),
    );
  });
  send({ type: 'ready' });
}
