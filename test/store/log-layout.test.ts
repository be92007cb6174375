/**
 * Job logs on SQLite: a directory per thousand jobs under DATA/logs, not one flat directory; an
 * installation whose logs lie flat has them moved into their directories when the server starts,
 * and reads them as before. Runs in the SQLite pass only: PostgreSQL keeps logs in rows.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { LOGS_MOVED_MARK, startServer } from '../../src/server/run.js';
import { FileLogStore, listLogFiles, shardLogs } from '../../src/store/log-store.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { call, localFactoryConfig } from '../helpers/server.js';
import { TEST_STORE } from '../helpers/store.js';
import { scratchDir } from '../helpers/scratch.js';

describe('job logs in directories', { skip: TEST_STORE !== 'sqlite' && 'runs in the SQLite pass' }, () => {
  const dir = scratchDir('berth-log-layout-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps a directory per thousand jobs, lists them, and removes them', async () => {
    const logs = new FileLogStore(join(dir, 'store'));
    await logs.append(7, Buffer.from('seven\n'));
    await logs.append(12_345, Buffer.from('a\0b\n'));
    await logs.append(12_345, Buffer.from('more\n'));
    assert.equal(readFileSync(join(dir, 'store', '0', '7.log'), 'utf8'), 'seven\n');
    assert.equal(readFileSync(join(dir, 'store', '12', '12345.log'), 'utf8'), 'a\0b\nmore\n');
    assert.deepEqual(
      (await listLogFiles(join(dir, 'store'))).map((f) => f.jobId),
      [7, 12_345],
    );
    await logs.discard([7]);
    assert.equal(existsSync(join(dir, 'store', '0', '7.log')), false);
  });

  it('moves flat files into their directories, saying how far it got', async () => {
    const flat = join(dir, 'flat');
    mkdirSync(flat);
    for (const id of [1, 2, 999, 1000, 2500]) writeFileSync(join(flat, `${id}.log`), `job ${id}\n`);
    writeFileSync(join(flat, 'notes.txt'), 'not a log');
    assert.deepEqual(
      (await listLogFiles(flat)).map((f) => f.jobId),
      [1, 2, 999, 1000, 2500],
      'flat files are listed too',
    );
    const progress: number[] = [];
    assert.equal(await shardLogs(flat, (n) => progress.push(n), 2), 5);
    assert.deepEqual(progress, [2, 4]);
    assert.deepEqual(readdirSync(flat).sort(), ['0', '1', '2', 'notes.txt']);
    assert.equal(readFileSync(join(flat, '2', '2500.log'), 'utf8'), 'job 2500\n');
    assert.equal(await shardLogs(flat), 0, 'nothing left to move');
  });

  it('moves an older installation’s flat logs at start and serves them', async () => {
    const dataDir = join(dir, 'data');
    const configFile = join(dir, 'berth.yaml');
    writeFileSync(configFile, localFactoryConfig(2));
    const start = (print: (line: string) => void = () => {}) =>
      startServer({ dataDir, configFile, database: 'sqlite', listen: '127.0.0.1:0', print });
    let s = await start();
    const admin = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    let api = `${s.url}/api/v1`;
    const job = await submit(api, admin, 'default', { script: 'echo from before' });
    await waitDone(api, admin, job.id);
    await s.close();
    // As an older berth left it: the file straight in DATA/logs, and no mark of a move.
    const logs = join(dataDir, 'logs');
    renameSync(join(logs, '0', `${job.id}.log`), join(logs, `${job.id}.log`));
    rmSync(join(logs, LOGS_MOVED_MARK));

    const lines: string[] = [];
    s = await start((line) => lines.push(line));
    try {
      api = `${s.url}/api/v1`;
      assert.ok(
        lines.includes(`job logs: moved 1 from ${logs} into a directory per thousand jobs`),
        lines.join('\n'),
      );
      assert.equal(existsSync(join(logs, `${job.id}.log`)), false);
      assert.equal((await call(api, admin, 'GET', `/jobs/${job.id}/logs`)).text, 'from before\n');
    } finally {
      await s.close();
    }
  });
});
