/**
 * How a test starts `berth` as a process of its own (the CLI suites' commands, servers that are
 * killed and restarted): the build in dist/, as users run it, when it is up to date with every
 * source file (scripts/test.mjs builds it first when it is not); else the sources through tsx,
 * so a test run by hand on changed sources never runs old code. A command started from the build
 * is a plain Node start, without a TypeScript loader: about half a second less each, which the CLI
 * suites, with hundreds of commands, feel most.
 */
import { join } from 'node:path';
import { buildIsFresh } from '../../scripts/build-fresh.mjs';
import { ROOT } from './root.js';

const SOURCE = join(ROOT, 'src', 'cli', 'main.ts');
const BUILT = join(ROOT, 'dist', 'cli', 'main.js');

/** Read once per test process: a build made while it runs is not half-used. */
const fresh = buildIsFresh(ROOT);

/** Node's arguments that run `berth` (then its own arguments follow). */
export const BERTH_ARGS: readonly string[] = fresh
  ? [BUILT]
  : ['--import', import.meta.resolve('tsx'), SOURCE];

/** Node's arguments for `berth` from the build, whether or not it is fresh (benchmarks build first). */
export const BUILT_BERTH_ARGS: readonly string[] = [BUILT];

/** `berth` as one shell word list (for a script a test writes): Node, then `BERTH_ARGS`. */
export const berthShellCommand = (): string =>
  [process.execPath, ...BERTH_ARGS].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
