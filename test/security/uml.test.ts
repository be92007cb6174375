/**
 * The confinement suites on a real cgroup-v2 kernel, on every run: this machine's cgroups are
 * hybrid (v1), and every current distribution boots with v2 alone. Debian's user-mode-linux boots
 * a Linux 6.1 kernel as a process, with this machine's filesystem as its root and cgroup2 (cpu,
 * io, memory, pids) mounted (scripts/uml/run.sh), and runs `cgroup-v2.test.ts` (memory, pids, CPU
 * enforced there), `confinement.test.ts` (namespaces: nothing outlives a job, private /tmp
 * and /dev/shm, its own /proc, a command looked up as the job), `images/image-run.test.ts` (a
 * job in an OCI image, over a layer of its own) and `images/image-confinement.test.ts` (a server's
 * image jobs held to their memory and pids, each in its own view) inside it, on SQLite.
 *
 * Needs root, `linux.uml` (apt-get install user-mode-linux) and BERTH_TEST_UML=1, which CI sets
 * (.ci/run): under UML every system call is a round trip through ptrace, so the three files take
 * a minute and a half alone on an idle machine, and took fourteen beside the rest of the suite on
 * a loaded CI machine (hence a limit of twenty); scripts/test.mjs gives this file a
 * run of its own beside the others. On a machine that is cgroup v2 already, those files run
 * directly, and this one has nothing to add.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ROOT } from '../helpers/root.js';

const umlHere = spawnSync('sh', ['-c', 'command -v linux.uml']).status === 0;
const skip =
  process.env.BERTH_TEST_UML !== '1'
    ? 'set BERTH_TEST_UML=1 to boot user-mode-linux (CI does; minutes on a 2-core machine)'
    : process.getuid?.() !== 0
      ? 'booting user-mode-linux on this machine’s filesystem needs root'
      : existsSync('/sys/fs/cgroup/cgroup.controllers')
        ? 'this kernel is cgroup v2 already: cgroup-v2.test.ts runs here directly'
        : umlHere
          ? false
          : 'linux.uml is missing (apt-get install user-mode-linux)';

/** The suites run inside (under test/); each must have run tests, none failed or skipped. */
const INSIDE = ['security/cgroup-v2', 'security/confinement', 'images/image-run', 'images/image-confinement'];

/**
 * How the suites start inside: Node's test runner on this run's build of them (scripts/test.mjs
 * compiled it: esbuild inside UML took 71 s of the run), or through tsx when this file runs from
 * its source (BERTH_TEST_BUILD=0).
 */
function insideArgv(): string[] {
  const here = fileURLToPath(import.meta.url);
  const ext = here.endsWith('.js') ? '.js' : '.ts';
  const files = INSIDE.map((name) => join(dirname(here), '..', `${name}.test${ext}`));
  return ext === '.js'
    ? ['node', '--enable-source-maps', '--test', '--test-reporter=spec', ...files]
    : ['node', '--import', 'tsx', '--test', '--test-reporter=spec', ...files];
}

describe('the confinement suites on a cgroup-v2 kernel (user-mode-linux)', { skip }, () => {
  it('pass there, none skipped', { timeout: 1_300_000 }, async () => {
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn('scripts/uml/run.sh', insideArgv(), {
        cwd: ROOT,
        env: { ...process.env, BERTH_TEST: '1', BERTH_TEST_STORE: 'sqlite', UML_TIMEOUT: '1200' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      child.on('close', (c) => resolve({ code: c, output }));
    });
    const tail = output.split('\n').slice(-60).join('\n');
    assert.match(output, /^== on Linux 6\.\d+.*cgroup2 controllers: .*\bmemory\b.*\bpids\b/m, tail);
    assert.equal(code, 0, tail);
    const passed = [...output.matchAll(/^ℹ pass (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    const skipped = [...output.matchAll(/^ℹ skipped (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    assert.ok(passed >= 10, `${passed} tests passed inside: ${tail}`);
    assert.equal(skipped, 0, `nothing skipped inside: ${tail}`);
  });
});
