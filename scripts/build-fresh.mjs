// Whether dist/ (what `npm run build` makes, and what users run: bin/berth.js) is up to date with
// src/: every source file has its compiled file, written after the source last changed. Read by
// scripts/test.mjs (which builds first when it is not) and by the tests that start `berth` as a
// process (test/helpers/berth-command.ts), which run the build when it is fresh — a plain Node
// start, without a TypeScript loader — and the sources through tsx when it is not.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');

/** Paths under `dir` (relative to it) of the files whose names end with `ext`. */
function files(dir, ext, prefix = '') {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) => {
    const rel = join(prefix, e.name);
    if (e.isDirectory()) return files(dir, ext, rel);
    return e.name.endsWith(ext) && !e.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** True when every src/X.ts has a dist/X.js at least as new as it. */
export function buildIsFresh(root = ROOT) {
  for (const rel of files(join(root, 'src'), '.ts')) {
    const source = statSync(join(root, 'src', rel)).mtimeMs;
    let built;
    try {
      built = statSync(join(root, 'dist', rel.replace(/\.ts$/, '.js'))).mtimeMs;
    } catch {
      return false;
    }
    if (built < source) return false;
  }
  return true;
}
