/**
 * `berth store backup`, `restore` and `check`, the CLI as a real process. A backup taken while jobs
 * flow restores into an empty data directory whose server starts with every job acknowledged
 * before the backup began, each finished one with its log byte for byte (a NUL byte too), and
 * runs new ones; restore refuses a directory that holds anything; check finds a log of no job. On
 * PostgreSQL, backup says to use pg_dump, in one line that keeps the password out.
 *
 * The backup runs in the SQLite pass only (its store is SQLite by nature).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startServer, type RunningServer } from '../../src/server/run.js';
import { logPath } from '../../src/store/log-store.js';
import { berth, sandbox, type Sandbox } from '../cli/cli.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { call, localFactoryConfig } from '../helpers/server.js';
import { TEST_STORE } from '../helpers/store.js';
import { scratchDir } from '../helpers/scratch.js';
import { waitFor } from '../helpers/wait.js';

/** Jobs submitted around the backup: before it, while it runs, and after. */
const FLOWING = 1000;

describe(
  'berth store backup and restore',
  { skip: TEST_STORE !== 'sqlite' && 'runs in the SQLite pass' },
  () => {
    const dir = scratchDir('berth-backup-');
    const dataDir = join(dir, 'data');
    const restored = join(dir, 'restored');
    const backup = join(dir, 'backup-1');
    const configFile = join(dir, 'berth.yaml');
    writeFileSync(configFile, localFactoryConfig(4));
    let sb: Sandbox;
    let s: RunningServer | undefined;
    let admin: string;
    const start = (at: string) =>
      startServer({ dataDir: at, configFile, database: 'sqlite', listen: '127.0.0.1:0', print: () => {} });

    before(() => {
      sb = sandbox();
    });
    after(async () => {
      await s?.close();
      sb.remove();
      rmSync(dir, { recursive: true, force: true });
    });

    /** Ids acknowledged before the backup began, and the logs of those that had finished. */
    const acknowledged: number[] = [];
    const finishedLogs = new Map<number, string>();

    it('takes a backup while jobs flow', async () => {
      s = await start(dataDir);
      admin = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
      const api = `${s.url}/api/v1`;
      for (const script of ["printf 'a\\0b\\n'", 'echo one; echo two >&2', 'seq 1 2000']) {
        const j = await submit(api, admin, 'default', { script });
        await waitDone(api, admin, j.id);
        finishedLogs.set(j.id, (await call(api, admin, 'GET', `/jobs/${j.id}/logs`)).text);
        acknowledged.push(j.id);
      }
      assert.equal(finishedLogs.get(acknowledged[0]!), 'a\0b\n');

      // 1,000 jobs flow (and more, until the backup is done), four submitters at a time, before,
      // during and after the backup; it begins once 300 are acknowledged, with the logs of those
      // that have ended by then read.
      let submitted = 0;
      const during: number[] = [];
      let backupBegan = false;
      let backupDone = false;
      const flow = Promise.all(
        Array.from({ length: 4 }, async () => {
          while (submitted < FLOWING || !backupDone) {
            submitted++;
            const j = await submit(api, admin, 'default', { script: `echo flow ${submitted}` });
            (backupBegan ? during : acknowledged).push(j.id);
          }
        }),
      );
      await waitFor('300 jobs acknowledged', () => acknowledged.length >= 300);
      const ended = await call<{ id: number }[]>(
        api,
        admin,
        'GET',
        '/projects/default/jobs?state=succeeded&limit=1000',
      );
      for (const { id } of ended.body)
        if (!finishedLogs.has(id))
          finishedLogs.set(id, (await call(api, admin, 'GET', `/jobs/${id}/logs`)).text);
      backupBegan = true;
      const r = await berth(sb, ['store', 'backup', backup, '--data-dir', dataDir]);
      backupDone = true;
      await flow;
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^ {2}database: [\d,]+ jobs$/m);
      assert.match(r.stdout, /^ {2}job logs: [\d,]+ files, [\d,]+ bytes$/m);
      assert.ok(during.length > 0, 'jobs were submitted while the backup ran');
      assert.ok(acknowledged.length + during.length >= FLOWING + 3);
      assert.ok(finishedLogs.size > 3, `${finishedLogs.size} jobs had ended before the backup`);
      const manifest = JSON.parse(readFileSync(join(backup, 'backup.json'), 'utf8')) as { jobs: number };
      assert.ok(manifest.jobs >= acknowledged.length, `${manifest.jobs} jobs in the backup`);
      await s.close();
      s = undefined;
    });

    it('refuses to restore into a data directory that holds anything, in one line', async () => {
      mkdirSync(join(dir, 'busy'));
      writeFileSync(join(dir, 'busy', 'x'), '');
      const r = await berth(sb, ['store', 'restore', backup, '--data-dir', join(dir, 'busy')]);
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr,
        `berth: ${join(dir, 'busy')} is not empty: restore into a new or empty data directory\n`,
      );
      const none = await berth(sb, ['store', 'restore', dir, '--data-dir', join(dir, 'new')]);
      assert.equal(none.code, 1);
      assert.match(
        none.stderr,
        /^berth: .* is not a berth backup \(no backup\.json of berth store backup\)\n$/,
      );
    });

    it('restores an installation that has every job acknowledged before the backup, with its log, and runs', async () => {
      const r = await berth(sb, ['store', 'restore', backup, '--data-dir', restored]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^restored the backup of .* into .*: [\d,]+ jobs, [\d,]+ logs$/m);
      s = await start(restored);
      const api = `${s.url}/api/v1`;
      for (const id of acknowledged)
        assert.equal((await call(api, admin, 'GET', `/jobs/${id}`)).status, 200, `job ${id} is there`);
      for (const [id, log] of finishedLogs)
        assert.equal((await call(api, admin, 'GET', `/jobs/${id}/logs`)).text, log, `the log of job ${id}`);
      const next = await submit(api, admin, 'default', { script: 'echo after the restore' });
      await waitDone(api, admin, next.id);
      assert.equal((await call(api, admin, 'GET', `/jobs/${next.id}/logs`)).text, 'after the restore\n');
    });

    it('checks a data directory: integrity, and files that lost their job', async () => {
      const clean = await berth(sb, ['store', 'check', '--data-dir', restored]);
      assert.equal(clean.code, 0, clean.stdout + clean.stderr);
      assert.equal(
        clean.stdout,
        'integrity: ok\nrows without their job: none\nlog files without their job: none\nusage rows no report can sum: none\n',
      );
      const stray = logPath(join(restored, 'logs'), 987_654);
      mkdirSync(join(stray, '..'), { recursive: true });
      writeFileSync(stray, 'of no job\n');
      const found = await berth(sb, ['store', 'check', '--data-dir', restored, '-o', 'json']);
      assert.equal(found.code, 1);
      const report = JSON.parse(found.stdout) as {
        ok: boolean;
        orphanLogs: { count: number; jobIds: number[] };
      };
      assert.deepEqual(report.orphanLogs, { count: 1, jobIds: [987_654] });
    });
  },
);

describe('berth store backup on PostgreSQL', () => {
  it('says to use pg_dump, in one line, without the password', async () => {
    const sb = sandbox();
    try {
      const r = await berth(sb, [
        'store',
        'backup',
        join(sb.root, 'b'),
        '--database',
        'postgres://berth:secret@db.example.com:5432/berth',
      ]);
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        /^berth: berth store backup works on the SQLite store; this installation is on PostgreSQL: back it up with pg_dump --format=custom --file=\S+ "postgres:\/\/berth:\*\*\*@db\.example\.com:5432\/berth" /,
      );
      assert.equal(r.stderr.split('\n').length, 2, 'one line');
      assert.doesNotMatch(r.stderr, /secret/);
    } finally {
      sb.remove();
    }
  });
});
