/**
 * The local agent host: one long-lived Node.js process that runs the agent for every worker of
 * the local factory. Starting Node costs ~65 ms but spawning a process ~1 ms, so one host for
 * all workers keeps the local factory limited by process start-up, not by Node start-up.
 * Each worker still speaks the ordinary agent protocol over HTTP with its own job token.
 *
 * If the server dies, the IPC channel closes and the host kills every job it runs before exiting:
 * nothing is left running that no server knows about.
 */
import { removeCgroup } from './cgroups.js';
import type { HostCommand, HostEvent } from './host-protocol.js';
import { killGroup } from './process-group.js';
import { runJob } from './run-job.js';

const pids = new Map<number, number>();
/** The cgroups of the jobs running here, removed by the factory on destroy — or here on exit. */
const cgroups = new Map<number, string[]>();

function send(e: HostEvent): void {
  // With a callback, a failed send (the server just went away) is not an 'error' event that
  // would crash the host before its disconnect handler stops the jobs.
  if (process.connected) process.send?.(e, undefined, {}, () => {});
}

function start(cmd: Extract<HostCommand, { type: 'start' }>): void {
  if (cmd.cgroup) cgroups.set(cmd.workerId, cmd.cgroup.dirs);
  runJob({
    url: cmd.url,
    token: cmd.token,
    workdir: cmd.workdir,
    env: { BERTH_WORKER_ID: String(cmd.workerId) },
    cgroup: cmd.cgroup,
    onSpawn: (pid) => {
      pids.set(cmd.workerId, pid);
      send({ type: 'spawned', workerId: cmd.workerId, pid });
    },
  }).then(
    (result) => send({ type: 'finished', workerId: cmd.workerId, result }),
    (err: unknown) =>
      send({
        type: 'failed',
        workerId: cmd.workerId,
        message: err instanceof Error ? err.message : String(err),
      }),
  );
}

export function runAgentHost(): void {
  process.on('message', (msg: HostCommand) => {
    if (msg.type === 'start') start(msg);
    else if (msg.type === 'kill') {
      const pid = pids.get(msg.workerId);
      if (pid) killGroup(pid, 'SIGKILL');
      pids.delete(msg.workerId);
      cgroups.delete(msg.workerId);
      send({ type: 'killed', workerId: msg.workerId });
    }
  });
  process.on('disconnect', () => {
    for (const pid of pids.values()) killGroup(pid, 'SIGKILL');
    // No factory is left to remove the jobs' cgroups (a next server would, at its start).
    void Promise.allSettled([...cgroups.values()].map((dirs) => removeCgroup(dirs, 2000))).then(() =>
      process.exit(0),
    );
  });
  send({ type: 'ready' });
}
