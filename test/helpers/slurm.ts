/**
 * The local Slurm cluster of scripts/slurm/cluster.sh for tests: started once per test process
 * (the script is idempotent and holds a lock, so test files running in parallel share one
 * cluster), and the reason to skip where it cannot run.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { waitFor } from './wait.js';
import { ROOT } from './root.js';

const CLUSTER_SH = join(ROOT, 'scripts', 'slurm', 'cluster.sh');
/** A first start installs slurm-wlm with apt-get (about 5 s, longer on a cold mirror). */
const START_TIMEOUT_MS = 10 * 60_000;

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Why Slurm tests cannot run here, or false. cluster.sh runs every daemon as root and installs
 * Slurm with apt-get when it is missing. With CI set this never skips: a CI machine that cannot
 * run them fails instead of passing silently.
 */
export function slurmSkip(): string | false {
  if (process.env.CI) return false;
  if (process.platform !== 'linux') return 'the local Slurm cluster needs Linux';
  if (process.getuid?.() !== 0) return 'the local Slurm cluster runs its daemons as root (scripts/slurm)';
  if (!onPath('slurmctld') && !onPath('apt-get')) return 'no slurmctld and no apt-get to install slurm-wlm';
  return false;
}

const started = new Map<string, Promise<{ env: Record<string, string> }>>();

/**
 * One test file on the cluster at a time: the two stores' passes run side by side
 * (scripts/test.mjs), and two files' jobs on three nodes would wait for each other's, past their
 * deadlines. The lock is a directory that names the process holding it, and comes into being with
 * that name: it is made under a name of its own, with the pid inside, then renamed into place
 * (atomic; refused while a lock is there). It is removed when its holder exits, and taken over
 * when its holder is gone (one killed mid-test). A reader never writes into it: an earlier
 * version read the pid with a flag that made the file, and a reader that came as the holder
 * removed it left an empty lock nobody held or could take — every other Slurm file of the run
 * waited for it until its deadline.
 */
const LOCK = join(tmpdir(), 'berth-test-slurm.lock');
const LOCK_WAIT_MS = 30 * 60_000;
let locked: Promise<void> | undefined;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid the lock names, or undefined when there is no lock (or it is being removed). */
function holder(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function tryLock(): boolean {
  const mine = `${LOCK}.${process.pid}`;
  rmSync(mine, { recursive: true, force: true });
  mkdirSync(mine);
  writeFileSync(join(mine, 'pid'), String(process.pid));
  try {
    renameSync(mine, LOCK);
  } catch {
    rmSync(mine, { recursive: true, force: true });
    const pid = holder(LOCK);
    // A lock that names a dead process is free: moved aside under a name of this process's own
    // (so that two takers cannot both remove it), then removed.
    if (pid !== undefined && !alive(pid)) {
      const stale = `${LOCK}.stale-${process.pid}`;
      try {
        renameSync(LOCK, stale);
        // Another taker may have put a live lock there since the pid was read: put it back.
        if (holder(stale) !== pid) renameSync(stale, LOCK);
        else rmSync(stale, { recursive: true, force: true });
      } catch {
        // taken by another meanwhile
      }
    }
    return false;
  }
  process.on('exit', () => {
    if (holder(LOCK) !== process.pid) return;
    // Moved aside first, in one step, then removed: removed in place, the lock would be an empty
    // directory for a moment, which another taker's rename may replace with its own lock — and
    // the removal would then fail (ENOTEMPTY) in this exit, or take that other's lock.
    const released = `${LOCK}.released-${process.pid}`;
    try {
      renameSync(LOCK, released);
      rmSync(released, { recursive: true, force: true });
    } catch {
      // gone already: nothing of this process's is left to release
    }
  });
  return true;
}

/** Resolves once this process holds the cluster, until it exits. */
export function holdSlurm(): Promise<void> {
  locked ??= waitFor(`the Slurm cluster, used by another test process (${LOCK})`, tryLock, LOCK_WAIT_MS).then(
    () => undefined,
  );
  return locked;
}

/**
 * Starts the cluster (or finds it up); resolves with the SLURM_CONF its clients need. `settings`
 * are cluster.sh's environment (BERTH_SLURM_NODES, BERTH_SLURM_DIR, ports…): another directory
 * and ports make a second cluster beside the tests' own.
 */
export function startSlurm(settings: Record<string, string> = {}): Promise<{ env: Record<string, string> }> {
  const key = JSON.stringify(settings);
  let start = started.get(key);
  if (start) return start;
  start = holdSlurm().then(() => startCluster(settings, key));
  started.set(key, start);
  return start;
}

function startCluster(
  settings: Record<string, string>,
  key: string,
): Promise<{ env: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, ...settings };
    execFile('bash', [CLUSTER_SH, 'start'], { timeout: START_TIMEOUT_MS, env }, (error, stdout, stderr) => {
      const conf = /^export SLURM_CONF=(.+)$/m.exec(stdout)?.[1];
      if (error || conf === undefined) {
        started.delete(key); // a later call tries again
        reject(new Error(`${CLUSTER_SH} start failed: ${error?.message ?? 'no SLURM_CONF'}\n${stderr}`));
      } else {
        resolve({ env: { SLURM_CONF: conf } });
      }
    });
  });
}

/** Stops the cluster that `settings` name (cluster.sh stop). */
export function stopSlurm(settings: Record<string, string> = {}): Promise<void> {
  started.delete(JSON.stringify(settings));
  return new Promise((resolve, reject) =>
    execFile(
      'bash',
      [CLUSTER_SH, 'stop'],
      { timeout: START_TIMEOUT_MS, env: { ...process.env, ...settings } },
      (error, _out, stderr) =>
        error ? reject(new Error(`${CLUSTER_SH} stop failed: ${error.message}\n${stderr}`)) : resolve(),
    ),
  );
}
