/**
 * A job's cgroups as the agent sees them. The local factory makes and sizes them
 * (factories/cgroups.ts); here the job's first process joins them before it runs the job's
 * command, the agent asks afterwards whether the kernel killed the job for memory, and the groups
 * are removed with whatever still runs in them. cgroup v1: one directory per controller; v2: one.
 */
import { readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/** A job's cgroups, as the local factory hands them to its agent host (plain data, sent over IPC). */
export interface JobCgroup {
  /** The job's group in each controller's hierarchy. */
  dirs: string[];
  /** The memory controller's group, and the limit as the job asked for it (e.g. "64Mi"). */
  memory?: { dir: string; limit: string };
  /** cgroup v2: one group holds every controller (`dirs` has one directory). */
  unified?: boolean;
}

/**
 * A shell's first words that join every group named before `--` (writing its own pid, which
 * `exec` keeps), then shift them away; what follows runs inside the groups (job-process.ts).
 * Joining from the agent after spawn would race: by the time Node returns from spawn the command
 * already runs, and children it forked meanwhile would stay outside the groups.
 */
export const JOIN =
  'for d in "$@"; do [ "$d" = -- ] && break; ' +
  'echo $$ > "$d/cgroup.procs" || { echo "berth: cannot join cgroup $d" >&2; exit 125; }; shift; done; ' +
  'shift; ';

/** The argv that runs `command` inside the job's groups. */
export function joinArgv(cgroup: JobCgroup, command: string[]): string[] {
  return ['/bin/sh', '-c', `${JOIN}exec "$@"`, 'berth-cgroup', ...cgroup.dirs, '--', ...command];
}

/**
 * Why the job died, when the kernel killed it for memory, from the kernel's own count of the
 * group's OOM kills: `oom_kill` in memory.events (v2), or in memory.oom_control (v1, Linux 4.13+).
 * Older v1 kernels lack it; there a group that hit its limit and a job that ended by SIGKILL (or a
 * shell's 137) is the best evidence.
 */
export async function outOfMemory(
  cgroup: JobCgroup,
  exit: { exitCode: number | null; signal: string | null },
): Promise<string | undefined> {
  if (!cgroup.memory) return undefined;
  const { dir, limit } = cgroup.memory;
  const control = await readFile(
    join(dir, cgroup.unified ? 'memory.events' : 'memory.oom_control'),
    'utf8',
  ).catch(() => '');
  const kills = /^oom_kill (\d+)$/m.exec(control);
  let killed: boolean;
  if (kills) killed = Number(kills[1]) > 0;
  else {
    const failcnt = Number(await readFile(join(dir, 'memory.failcnt'), 'utf8').catch(() => '0'));
    killed = failcnt > 0 && (exit.signal === 'SIGKILL' || exit.exitCode === 137);
  }
  return killed ? `killed: out of memory (limit ${limit})` : undefined;
}

/** The pids in a group; none when it is gone. */
async function members(dir: string): Promise<number[]> {
  const text = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map(Number);
}

/**
 * Kills whatever still runs in the groups and removes them (a group already gone is fine). Every
 * pid listed is in our group, so this also ends processes that left the job's process group; on
 * v2 (Linux 5.14+) `cgroup.kill` first kills them all at once, forks meanwhile included.
 * A group can only be removed once its processes have exited, so this retries until `timeoutMs`.
 * Most groups are empty by now (their job's end was vouched for): one rmdir each, then.
 */
export async function removeCgroup(dirs: string[], timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const dir of dirs) {
    for (let attempt = 0; ; attempt++) {
      try {
        await rmdir(dir);
        break;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') break;
        if (code !== 'EBUSY' || Date.now() > deadline)
          throw new Error(`cannot remove cgroup ${dir}: ${(e as Error).message}`);
      }
      // Busy: something still runs in it.
      if (attempt === 0) await writeFile(join(dir, 'cgroup.kill'), '1').catch(() => {}); // v1, an older kernel: absent
      for (const pid of await members(dir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // exited meanwhile
        }
      }
      if (attempt > 0) await delay(10);
    }
  }
}
