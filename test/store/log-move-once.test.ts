/**
 * A start of the server on SQLite lists DATA/logs for flat logs of an older berth only once: after
 * their move it leaves a mark (server/run.ts), and later starts skip the listing. DATA/logs holds a
 * directory per thousand jobs, so the listing grew with the history (1,030 directories and up to
 * 28 ms of each restart at 10 million jobs in bench/history.ts).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { LOGS_MOVED_MARK, startServer } from '../../src/server/run.js';
import { localFactoryConfig } from '../helpers/server.js';
import { TEST_STORE } from '../helpers/store.js';
import { scratchDir } from '../helpers/scratch.js';

describe(
  'the move of flat logs at start',
  { skip: TEST_STORE !== 'sqlite' && 'runs in the SQLite pass' },
  () => {
    const dir = scratchDir('berth-log-move-');
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('is done once: a start after it does not list DATA/logs again', async () => {
      const dataDir = join(dir, 'data');
      const configFile = join(dir, 'berth.yaml');
      writeFileSync(configFile, localFactoryConfig(2));
      const start = (print: (line: string) => void = () => {}) =>
        startServer({ dataDir, configFile, database: 'sqlite', listen: '127.0.0.1:0', print });
      const logs = join(dataDir, 'logs');
      mkdirSync(logs, { recursive: true });
      writeFileSync(join(logs, '3.log'), 'flat\n');

      let s = await start();
      await s.close();
      assert.equal(existsSync(join(logs, '0', '3.log')), true, 'the first start moved the flat log');
      assert.equal(existsSync(join(logs, LOGS_MOVED_MARK)), true);

      // A flat file now (no berth that knows the mark writes one) is left where it is: not listed.
      writeFileSync(join(logs, '4.log'), 'flat\n');
      const lines: string[] = [];
      s = await start((line) => lines.push(line));
      await s.close();
      assert.equal(existsSync(join(logs, '4.log')), true, 'the second start did not list DATA/logs');
      assert.ok(!lines.some((l) => l.startsWith('job logs:')), lines.join('\n'));
    });
  },
);
