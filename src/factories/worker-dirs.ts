/**
 * A local worker's directories: made for its members, each owned by the member's uid where jobs
 * run under uids of their own, and removed after it without following any link the job put in
 * them (agent/remove-beneath.ts).
 */
import { chmod, chown, mkdir, rmdir } from 'node:fs/promises';
import type { JobIdentity } from '../agent/identity.js';
import { removeBeneath } from '../agent/remove-beneath.js';

/**
 * A worker's directory and its members' (a gang's `rank-R`), each one mkdir: DATA/workers exists
 * (made at the factory's start), and a recursive mkdir walks the path with a stat per level.
 */
export async function makeWorkdirs(
  workdir: string,
  members: string[],
  owners?: JobIdentity[],
): Promise<void> {
  const dirs = [workdir, ...members];
  for (const dir of dirs) {
    try {
      await mkdir(dir, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') await mkdir(dir, { recursive: true, mode: 0o700 });
      else if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  if (!owners) return;
  // Each member's directory is its own; a gang's shared parent is traversable only.
  if (members.length === 0) await chown(workdir, owners[0]!.uid, owners[0]!.gid);
  else {
    await chmod(workdir, 0o711);
    for (const [rank, dir] of members.entries()) await chown(dir, owners[rank]!.uid, owners[rank]!.gid);
  }
}

/**
 * Removes worker `workerId`'s directory. Most jobs leave it empty: one rmdir, and a tree walk
 * only for the others, which follows no link the job may have put in a directory's place. What
 * could not be removed is said on stderr.
 */
export async function removeWorkdir(workerId: number, workdir: string): Promise<void> {
  await rmdir(workdir).catch(async () => {
    const { left } = await removeBeneath(workdir);
    if (left.length > 0)
      process.stderr.write(
        `berth: worker ${workerId}'s directory ${workdir}: not removed: ${left.join(', ')}\n`,
      );
  });
}
