/**
 * A rolling upgrade of real `berth server` replicas on one PostgreSQL database: an older berth
 * (BERTH_TEST_MIGRATIONS: it knows one migration fewer, as the release before would) and a newer
 * one. The newer waits, without serving, while the older runs and writes; once the older has
 * stopped it migrates and leads, with what the older wrote; an older replica started afterwards,
 * or one still running when the newer migrated, stops with one line.
 *
 * PostgreSQL pass only: replicas need PostgreSQL whichever store the rest of the suite runs on.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { MIGRATIONS } from '../../src/store/migrations/index.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { scratchDir } from '../helpers/scratch.js';
import { createTestDatabase, PG_ADMIN_URL, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import { BERTH_ARGS } from '../helpers/berth-command.js';
import { health, replicaConfig } from './support.js';
import { query, REFUSAL as ONE_LINE, schemaOf } from './upgrade-support.js';

const OLDER = { BERTH_TEST_MIGRATIONS: String(MIGRATIONS.length - 1) };
const REFUSAL = `berth: ${ONE_LINE}`;

// A replica cut off finds out when its next connection is refused, which its lease's and its bus's
// retries may put off for a while on a loaded machine (30 s was once not enough).
const exited = (p: ServerProcess) =>
  waitFor(`server ${p.url} to exit`, () => p.child.exitCode ?? undefined, 90_000).catch((e: Error) => {
    throw new Error(`${e.message}; it printed:\n${p.output()}`);
  });

describe(
  'a rolling upgrade of server replicas',
  { skip: TEST_STORE !== 'postgres' && 'runs in the PostgreSQL pass' },
  () => {
    const dir = scratchDir('berth-rolling-');
    const config = join(dir, 'berth.yaml');
    writeFileSync(config, replicaConfig());
    const children: ChildProcess[] = [];
    const databases: TestDatabase[] = [];
    const roles: string[] = [];
    after(async () => {
      // Every server, listening or not (one still waiting to migrate never listens).
      for (const c of children)
        if (c.exitCode === null && c.signalCode === null) await killHard({ child: c } as ServerProcess);
      for (const d of databases) await d.drop();
      for (const r of roles) await query(PG_ADMIN_URL, `DROP ROLE IF EXISTS ${r}`);
      rmSync(dir, { recursive: true, force: true });
    });
    const database = async () => {
      const d = await createTestDatabase();
      databases.push(d);
      return d.url;
    };
    const serve = (name: string, url: string, env: NodeJS.ProcessEnv = {}, token?: string) => {
      return spawnServer(join(dir, name), config, {
        database: url,
        env,
        onSpawn: (c) => children.push(c),
        ...(token ? { token } : {}),
      });
    };

    it('the newer replica migrates and leads once the older has stopped; an older one then refuses', async () => {
      const url = await database();
      const old = await serve('old', url, OLDER);
      const before = await submit(old.api, old.token, 'default', { command: ['true'] });
      await waitDone(old.api, old.token, before.id);

      const starting = serve('new', url, {}, old.token);
      await waitFor(
        'the newer replica to wait at the migration',
        async () =>
          (await query(url, "SELECT 1 FROM pg_stat_activity WHERE application_name = 'berth migration'"))
            .rowCount! > 0,
      );
      // Meanwhile the older replica leads and writes, on its own schema.
      assert.equal(await schemaOf(url), MIGRATIONS.length - 1);
      const during = await submit(old.api, old.token, 'default', { command: ['true'] });
      assert.equal((await waitDone(old.api, old.token, during.id)).state, 'succeeded');
      assert.equal(await schemaOf(url), MIGRATIONS.length - 1);

      old.child.kill('SIGTERM');
      await exited(old);
      const newer = await starting;
      assert.equal(await schemaOf(url), MIGRATIONS.length);
      await waitFor('the newer replica to lead', async () => (await health(newer)).role === 'leader');
      for (const id of [before.id, during.id])
        assert.equal((await waitDone(newer.api, newer.token, id)).state, 'succeeded');
      const after = await submit(newer.api, newer.token, 'default', { command: ['true'] });
      assert.equal((await waitDone(newer.api, newer.token, after.id)).state, 'succeeded');

      // An older replica started now (a rollback by mistake) refuses, in one line.
      const child = spawn(
        process.execPath,
        [
          ...BERTH_ARGS,
          'server',
          '--data-dir',
          join(dir, 'late'),
          '--listen',
          '127.0.0.1:0',
          '--config',
          config,
          '--database',
          url,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...OLDER } },
      );
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((r) => child.on('exit', r));
      assert.notEqual(code, 0);
      assert.equal(err.trim().split('\n').at(-1), REFUSAL);
    });

    it('an older replica still running when the newer migrated stops, in one line', async () => {
      const url = await database();
      // The older replica connects as a role of its own, so that the test can cut it off.
      const role = `berth_older_${process.pid}_${Date.now().toString(36)}`;
      roles.push(role);
      await query(PG_ADMIN_URL, `CREATE ROLE ${role} LOGIN SUPERUSER`);
      const oldUrl = new URL(url);
      oldUrl.username = role;
      const old = await serve('old2', oldUrl.toString(), OLDER);
      assert.equal((await health(old)).role, 'leader');

      // A partition: the older replica's connections end and it cannot open new ones. None of
      // them holds the schema now, so the newer replica migrates at once.
      await query(PG_ADMIN_URL, `ALTER ROLE ${role} NOLOGIN`);
      await query(
        PG_ADMIN_URL,
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '${role}'`,
      );
      const newer = await serve('new2', url, {}, old.token);
      assert.equal(await schemaOf(url), MIGRATIONS.length);
      await waitFor('the newer replica to lead', async () => (await health(newer)).role === 'leader');

      // The partition heals: the older replica's first new connection finds the newer schema, and
      // it stops, saying so, without having written.
      await query(PG_ADMIN_URL, `ALTER ROLE ${role} LOGIN`);
      assert.equal(await exited(old), 1);
      // What it printed last may still be in the pipe when it has exited: waited for.
      await waitFor('its refusal, printed', () => old.output().includes(REFUSAL), 10_000).catch(
        (e: Error) => {
          throw new Error(`${e.message}; it printed:\n${old.output()}`);
        },
      );
    });
  },
);
