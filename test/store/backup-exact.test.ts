/**
 * `berth store backup` and `restore` keep what they copy exactly: a log holding every byte value
 * (NULs among them), a 100 MiB log, and a job with 10,000 events come back byte for byte and
 * event for event. The CLI as real processes on a data directory a real server made; the big log
 * and the events are written straight into the installation (quickly) after it stopped.
 *
 * SQLite pass only: the backup is SQLite's (PostgreSQL's is pg_dump).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  createReadStream,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startServer } from '../../src/server/run.js';
import { logPath } from '../../src/store/log-store.js';
import { listJobEvents, type EventView } from '../../src/store/queries/events.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { berth, sandbox } from '../cli/cli.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';
import { TEST_STORE } from '../helpers/store.js';

const MIB = 1024 * 1024;
const BIG = 100 * MIB;
const EVENTS = 10_000;

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** A job's timeline as the store reads it. */
async function timeline(dataDir: string, jobId: number): Promise<EventView[]> {
  const store = await openSqliteStore(join(dataDir, 'berth.db'));
  try {
    return await listJobEvents(store.db, jobId);
  } finally {
    await store.close();
  }
}

describe('a backup restores exactly', { skip: TEST_STORE !== 'sqlite' && 'runs in the SQLite pass' }, () => {
  const dir = scratchDir('berth-backup-exact-');
  const sb = sandbox();
  after(() => {
    sb.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a log with NUL bytes, a 100 MiB log and a job with 10,000 events', async () => {
    const dataDir = join(dir, 'data');
    const configFile = join(dir, 'berth.yaml');
    writeFileSync(configFile, localFactoryConfig(2));
    const s = await startServer({
      dataDir,
      configFile,
      database: 'sqlite',
      listen: '127.0.0.1:0',
      print: () => {},
    });
    const ids: number[] = [];
    try {
      const api = `${s.url}/api/v1`;
      const admin = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
      for (const script of ["printf 'a\\0b\\0\\0c\\n'", 'true', 'true']) {
        const j = await submit(api, admin, 'default', { script });
        await waitDone(api, admin, j.id);
        ids.push(j.id);
      }
    } finally {
      await s.close();
    }
    const [nul, big, busy] = ids as [number, number, number];
    const logs = join(dataDir, 'logs');

    // Every byte value, NULs included, twice, after what the job printed.
    const every = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
    writeFileSync(logPath(logs, nul), Buffer.concat([readFileSync(logPath(logs, nul)), every]));
    // 100 MiB of random bytes, each MiB different, so that a misplaced block would show.
    const fd = openSync(logPath(logs, big), 'w');
    for (let i = 0; i < BIG / MIB; i++) writeSync(fd, randomBytes(MIB));
    closeSync(fd);
    // 10,000 more events on one job, each different, some with data and characters beyond ASCII.
    const store = await openSqliteStore(join(dataDir, 'berth.db'));
    try {
      await store.transaction(async (tx) => {
        for (let from = 0; from < EVENTS; from += 500) {
          const rows = Array.from({ length: 500 }, (_, k) => {
            const n = from + k;
            return {
              at: 1_700_000_000_000 + n,
              subject_kind: 'job',
              subject: String(busy),
              project: 'default',
              job_id: busy,
              type: n % 2 ? 'log' : 'note',
              message: `event ${n}: é ✓ 𝄞 "quoted" \\ back`,
              data: n % 3 ? null : JSON.stringify({ n, list: [n, 'x'] }),
            };
          });
          await tx.insertInto('events').values(rows).execute();
        }
      });
    } finally {
      await store.close();
    }
    const before = await timeline(dataDir, busy);
    assert.ok(before.length >= EVENTS, `${before.length} events`);

    const backup = join(dir, 'backup');
    const restored = join(dir, 'restored');
    const b = await berth(sb, ['store', 'backup', backup, '--data-dir', dataDir]);
    assert.equal(b.code, 0, b.stderr);
    const r = await berth(sb, ['store', 'restore', backup, '--data-dir', restored]);
    assert.equal(r.code, 0, r.stderr);

    assert.ok(readFileSync(logPath(join(restored, 'logs'), nul)).equals(readFileSync(logPath(logs, nul))));
    assert.ok(
      readFileSync(logPath(join(restored, 'logs'), nul))
        .subarray(-every.length)
        .equals(every),
    );
    assert.equal(await sha256(logPath(join(restored, 'logs'), big)), await sha256(logPath(logs, big)));
    // Compared event by event: the first that differs is named, not 10,000 printed.
    const back = await timeline(restored, busy);
    assert.equal(back.length, before.length, 'events of the busy job');
    const differs = back.findIndex((e, i) => JSON.stringify(e) !== JSON.stringify(before[i]));
    assert.equal(differs, -1, `event ${differs} differs: ${JSON.stringify(back[differs])}`);
  });
});
