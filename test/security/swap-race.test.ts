/**
 * Root reads what a job made without following what the job controls (docs/SECURITY.md): the
 * agent opens each artifact beneath the working directory, step by step through descriptors,
 * never through a symbolic link, and checks it on the open descriptor (agent/beneath.ts).
 *
 * The race is real: a process of another uid — the job's — swaps, as fast as it can, a file for a
 * symbolic link to a root-only secret and back, and a directory of the path for a link to the
 * secret's directory and back, while root opens and reads the name again and again. Root must
 * read the job's own bytes or nothing, never the secret. Reading by path after a check by path
 * (`lstat`, then `open`) — what the agent did before — reads the secret within a few thousand
 * tries here; the last case shows it, so that this test can fail.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { lstat, readFile, rm } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { NotBeneathError, openBeneath } from '../../src/agent/beneath.js';
import { removeBeneath } from '../../src/agent/remove-beneath.js';
import { scratchDir } from '../helpers/scratch.js';

const asRoot = process.getuid?.() === 0;
const skip = asRoot ? false : 'the race needs a process of another uid than the reader: run as root';

/** A uid no one uses (the job's stand-in). */
const JOB_UID = 64_999;
const SECRET = 'the-admin-token';
const OWN = 'the-jobs-own-bytes';

/** Root's secret in a root-only directory, and a job directory owned by the job's uid. */
function world() {
  const top = scratchDir('berth-swap-');
  const vault = join(top, 'vault');
  mkdirSync(vault, { mode: 0o700 });
  writeFileSync(join(vault, 'out.txt'), SECRET, { mode: 0o600 });
  mkdirSync(join(vault, 'd'), { mode: 0o700 });
  writeFileSync(join(vault, 'd', 'out.txt'), SECRET, { mode: 0o600 });
  const work = join(top, 'work');
  mkdirSync(work, { mode: 0o700 });
  chownSync(work, JOB_UID, JOB_UID);
  return { top, vault, work };
}

const racers: ChildProcess[] = [];
after(() => {
  for (const r of racers) r.kill('SIGKILL');
});

/**
 * Runs `code` (Node.js, with `fs` and the arguments in `dir` and `vault`) as the job's uid until
 * the test ends: a swap loop of renames, each a system call of a few microseconds.
 */
function race(code: string, dir: string, vault: string): ChildProcess {
  const child = spawn(
    process.execPath,
    ['-e', `const fs = require('node:fs'); const [dir, vault] = process.argv.slice(1); ${code}`, dir, vault],
    { uid: JOB_UID, gid: JOB_UID, stdio: 'ignore' },
  );
  racers.push(child);
  return child;
}

/**
 * In `dir`: `out.txt` is the job's own file, then a link to the vault's secret; `d` its own
 * directory, then a link to the vault's directory `d`. Renames: the name is always one or the
 * other.
 */
const SWAP_FILES = `
  process.chdir(dir);
  fs.writeFileSync('own.txt', '${OWN}'); fs.copyFileSync('own.txt', 'out.txt');
  fs.symlinkSync(vault + '/out.txt', 'lnk.txt'); fs.symlinkSync(vault + '/d', 'lnk.d');
  fs.mkdirSync('d'); fs.writeFileSync('d/out.txt', '${OWN}');
  for (;;) {
    fs.renameSync('out.txt', 'own.txt'); fs.renameSync('lnk.txt', 'out.txt');
    fs.renameSync('out.txt', 'lnk.txt'); fs.renameSync('own.txt', 'out.txt');
    fs.renameSync('d', 'own.d'); fs.renameSync('lnk.d', 'd');
    fs.renameSync('d', 'lnk.d'); fs.renameSync('own.d', 'd');
  }`;

/** Reads the name through openBeneath: the bytes, or the reason it was refused. */
async function readBeneath(work: string, name: string): Promise<string> {
  try {
    const f = await openBeneath(work, name, JOB_UID);
    try {
      return (await f.handle.readFile()).toString();
    } finally {
      await f.handle.close();
    }
  } catch (e) {
    if (e instanceof NotBeneathError) return `refused: ${e.reason}`;
    throw e;
  }
}

describe('opening a job’s file as root, beneath its directory', { skip }, () => {
  it('refuses a link at the end or on the way, a FIFO (without waiting), another uid’s file', async () => {
    const { work, vault } = world();
    symlinkSync(join(vault, 'out.txt'), join(work, 'link.txt'));
    symlinkSync(join(vault, 'd'), join(work, 'linkdir'));
    assert.equal(spawnSync('mkfifo', [join(work, 'fifo')]).status, 0);
    linkSync(join(vault, 'out.txt'), join(work, 'hard.txt'));
    mkdirSync(join(work, 'sub'));
    writeFileSync(join(work, 'sub', 'ok.txt'), OWN);
    chownSync(join(work, 'sub'), JOB_UID, JOB_UID);
    chownSync(join(work, 'sub', 'ok.txt'), JOB_UID, JOB_UID);
    assert.equal(await readBeneath(work, 'link.txt'), 'refused: link.txt is a symbolic link');
    assert.equal(await readBeneath(work, 'linkdir/out.txt'), 'refused: linkdir is a symbolic link');
    assert.equal(await readBeneath(work, 'fifo'), 'refused: not a regular file');
    assert.equal(await readBeneath(work, 'hard.txt'), "refused: not the job's own file");
    assert.equal(
      await readBeneath(work, '../vault/out.txt'),
      'refused: its name leads outside the working directory',
    );
    assert.equal(await readBeneath(work, 'sub/ok.txt'), OWN);
  });

  it('never reads the secret while the job swaps a file and a directory for links', async () => {
    const { work, vault } = world();
    race(SWAP_FILES, work, vault);
    const seen = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      for (const name of ['out.txt', 'd/out.txt']) {
        const got = await readBeneath(work, name);
        assert.notEqual(got, SECRET, `try ${i}: root read the secret through ${name}`);
        seen.set(got, (seen.get(got) ?? 0) + 1);
      }
    }
    // The race ran: both the job's own bytes and refusals were seen.
    assert.ok((seen.get(OWN) ?? 0) > 0, `the job's own file was read: ${JSON.stringify([...seen])}`);
    assert.ok(
      [...seen.keys()].some((k) => k.startsWith('refused')),
      JSON.stringify([...seen]),
    );
  });

  it('(the control) checking by path, then opening by path, reads the secret', async () => {
    const { work, vault } = world();
    race(SWAP_FILES, work, vault);
    let leaked = 0;
    // A race: it is won within a second on a quiet machine; a loaded one gets a minute.
    for (const deadline = Date.now() + 60_000; Date.now() < deadline && leaked === 0;) {
      const path = join(work, 'out.txt');
      try {
        const st = await lstat(path);
        if (!st.isFile() || st.uid !== JOB_UID) continue;
        if ((await readFile(path, 'utf8')) === SECRET) leaked++;
      } catch {
        // swapped meanwhile
      }
    }
    assert.ok(leaked > 0, 'the swap won the race against a check by path within a minute');
  });
});

/**
 * The vault with `n` files of root's, and the job's directory `a` in which `d` is the job's own
 * directory with files, then a link to the vault, over and over.
 */
function removalWorld(n: number) {
  const { top, vault, work } = world();
  for (let i = 0; i < n; i++) writeFileSync(join(vault, `f${i}`), SECRET, { mode: 0o600 });
  race(
    // Each step is tried every time round, so that what a removal took is made again.
    `process.chdir(dir); fs.mkdirSync('a');
    const t = (f) => { try { f(); } catch {} };
    for (;;) {
      t(() => fs.mkdirSync('a/own')); t(() => fs.writeFileSync('a/own/x', '')); t(() => fs.symlinkSync(vault, 'a/lnk'));
      t(() => fs.renameSync('a/own', 'a/d')); t(() => fs.renameSync('a/d', 'a/own'));
      t(() => fs.renameSync('a/lnk', 'a/d')); t(() => fs.renameSync('a/d', 'a/lnk'));
    }`,
    work,
    vault,
  );
  return { top, vault, work, files: () => readdirSync(vault).length };
}

describe('removing a job’s directory as root', { skip }, () => {
  it('removes links, not what they lead to, and a tree deeper than its descriptors', async () => {
    const { vault, work } = world();
    symlinkSync(vault, join(work, 'to-vault'));
    mkdirSync(join(work, 'sub'));
    symlinkSync(join(vault, 'out.txt'), join(work, 'sub', 'to-secret'));
    let deep = join(work, 'deep');
    for (let i = 0; i < 100; i++) mkdirSync((deep = join(deep, `l${i}`)), { recursive: true });
    writeFileSync(join(deep, 'bottom'), OWN);
    assert.deepEqual(await removeBeneath(work), { left: [] });
    assert.equal(readdirSync(join(vault, '..')).includes('work'), false, 'the directory is gone');
    assert.equal(readFileSync(join(vault, 'out.txt'), 'utf8'), SECRET);
    assert.deepEqual(readdirSync(vault).sort(), ['d', 'out.txt']);
  });

  it('never removes a file of the directory a subdirectory was swapped for', async () => {
    const w = removalWorld(100);
    for (let i = 0; i < 2000; i++) await removeBeneath(join(w.work, 'a', 'd'));
    assert.equal(w.files(), 102, 'every file of the vault is still there');
  });

  it('(the control) a removal that walks by path removes the vault’s files', async () => {
    const w = removalWorld(100);
    // A race: it is won within a second or two on a quiet machine; a loaded one gets a minute.
    for (const deadline = Date.now() + 60_000; Date.now() < deadline && w.files() === 102;)
      await rm(join(w.work, 'a', 'd'), { recursive: true, force: true }).catch(() => {});
    assert.ok(w.files() < 102, 'the swap won against a removal by path within a minute');
  });
});
