// Compiles the TypeScript of src/, test/ and bench/ once, for one test run, into a folder of its
// own under build/ (esbuild: the transform tsx makes in each process, made once). Each test file
// then starts as plain Node — no loader thread, no esbuild service process, no per-process
// transform or cache lookups: test/api/meta.test.ts alone took 4.9 CPU-s through tsx, 2.9 built.
// Type checking is not this script's work: `npm run checks` (tsc) does it beside the tests.
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build } from 'esbuild';

const SOURCES = ['src', 'test', 'bench'];

/** The .ts files under `dir`. */
function typescript(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return typescript(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/**
 * Builds the sources into `out` (a folder under `root`, so that module resolution finds
 * `root/node_modules` and `packageRoot()` finds berth's package.json above it), with source maps:
 * a stack trace under `node --enable-source-maps` names the .ts file and line. The few plain
 * JavaScript modules the tests import (scripts/*.mjs) are copied beside them.
 */
export async function buildTests(root, out) {
  rmSync(out, { recursive: true, force: true });
  const entryPoints = SOURCES.flatMap((dir) => typescript(join(root, dir)));
  await build({
    absWorkingDir: root,
    entryPoints: entryPoints.map((p) => relative(root, p)),
    outdir: relative(root, out),
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
  });
  mkdirSync(join(out, 'scripts'), { recursive: true });
  for (const name of readdirSync(join(root, 'scripts')).filter((n) => n.endsWith('.mjs')))
    copyFileSync(join(root, 'scripts', name), join(out, 'scripts', name));
  return entryPoints.length;
}
