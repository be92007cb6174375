/**
 * Holds on the images of a cache that several processes share: the node-local cache of the
 * `berth agent`s of one Slurm node (each Slurm job runs an agent of its own, and a node runs
 * several jobs at once). A process holding an image keeps every other's bound from removing it.
 *
 *   DIR/.holds/<image>@<pid>-<n>   one per job holding <image>, in process <pid>
 *   DIR/.lock                      taken while a hold is made, and while the bound picks what goes
 *
 * A hold is made, and the bound's choice and its rename of an image out of its name are done,
 * under one lock (proper-lockfile: a directory made at once, a stale one taken over), so an image
 * is either held before the bound looks, or gone before the holder looks for it (and then pulled
 * again). A process killed -9 leaves its hold files: a hold whose process is gone holds nothing,
 * and is removed when a process opens the cache.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';

const HOLDS = '.holds';
const LOCK = '.lock';

/** Whether process `pid` still runs (EPERM: it does, as another user's). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class SharedHolds {
  private readonly holds: string;
  private seq = 0;

  /** Opens DIR's holds (made 0700), removing those whose process is gone. */
  constructor(private readonly dir: string) {
    this.holds = join(dir, HOLDS);
    mkdirSync(this.holds, { recursive: true, mode: 0o700 });
    for (const name of readdirSync(this.holds)) {
      const pid = pidOf(name);
      if (pid === undefined || !alive(pid)) rmSync(join(this.holds, name), { force: true });
    }
  }

  /** Runs `fn` with the cache's lock held: no other process makes a hold or evicts meanwhile. */
  async locked<T>(fn: () => T): Promise<T> {
    const release = await lockfile.lock(this.dir, {
      lockfilePath: join(this.dir, LOCK),
      realpath: false,
      // Held for a few file operations: a lock untouched this long belongs to a process that died.
      stale: 10_000,
      retries: { retries: 400, minTimeout: 5, maxTimeout: 50 },
    });
    try {
      return fn();
    } finally {
      await release();
    }
  }

  /** Holds image `name` (a cache entry's directory name) for this process; call under `locked`. */
  hold(name: string): () => void {
    const file = join(this.holds, `${name}@${process.pid}-${++this.seq}`);
    writeFileSync(file, '', { mode: 0o600 });
    return () => rmSync(file, { force: true });
  }

  /** Whether a live process holds image `name`; ask under `locked`. */
  held(name: string): boolean {
    for (const entry of readdirSync(this.holds)) {
      if (!entry.startsWith(`${name}@`)) continue;
      const pid = pidOf(entry);
      if (pid !== undefined && alive(pid)) return true;
    }
    return false;
  }
}

function pidOf(holdName: string): number | undefined {
  const m = /@(\d+)-\d+$/.exec(holdName);
  return m ? Number(m[1]) : undefined;
}
