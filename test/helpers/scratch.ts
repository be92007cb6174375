/**
 * Temporary directories that the test and its jobs share. As root, the local factory runs each job
 * under a uid of its own (docs/SECURITY.md), which cannot enter the test's own 0700 temporary
 * directories: a gate file the test writes there, or a file a job writes for the test to read,
 * lives in one of these instead — open to every user, sticky as /tmp is. They are made in
 * /var/tmp, not /tmp: a job in namespaces of its own (docs/SECURITY.md) has a /tmp of its own, in
 * which the test's files are not.
 */
import { appendFileSync, chmodSync, mkdtempSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Where every user may write, and which jobs' namespaces leave the host's. */
export const SHARED_TMP = '/var/tmp';

export function scratchDir(prefix: string, parent: string = SHARED_TMP): string {
  const dir = mkdtempSync(join(parent, prefix));
  chmodSync(dir, 0o1777);
  return dir;
}

/** A file in a scratch directory that every job may append to (made empty if it is not there). */
export function sharedFile(path: string): string {
  appendFileSync(path, '');
  chmodSync(path, 0o666);
  return path;
}

/**
 * A script that counts a job's runs in `dir` and does `then` with `$n` its run (1, 2, …): a file
 * per run (`NAME.run-XXXXXXXX`, made by mktemp), since each run may have a uid of its own, which
 * cannot write another run's file (and, in a pid namespace of its own, every run's shell may have
 * the same pid). `runsOf` reads the count.
 */
export function countedRuns(dir: string, name: string, then: string): string {
  const f = join(dir, name);
  return `n=$(( $(ls ${f}.run-* 2>/dev/null | wc -l) + 1 )); mktemp ${f}.run-XXXXXXXX >/dev/null; ${then}`;
}

/** How many runs `countedRuns(dir, name, …)` counted. */
export function runsOf(dir: string, name: string): number {
  return readdirSync(dir).filter((f) => f.startsWith(`${name}.run-`)).length;
}
