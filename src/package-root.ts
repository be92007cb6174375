import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's root: the nearest folder above `from` with berth's package.json. A module runs
 * from `src/` under tsx, from `dist/` once built, and from `build/src/` in the test runs
 * (scripts/build-tests.mjs), so no fixed number of `..` finds it from all three.
 */
export function packageRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'berth'
    )
      return dir;
    if (dirname(dir) === dir) throw new Error(`no berth package.json above ${from}`);
  }
}
