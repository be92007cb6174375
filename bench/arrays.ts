/**
 * `npm run bench -- arrays` (issue #15): one request submits an array of 100,000 tasks into a
 * held queue (nothing runs), timed at the client; the bytes the tasks take in the SQLite file
 * (every table and index, read with SQLite's dbstat from a second connection) divided by their
 * number. Beside it, in the same run, 10,000 jobs submitted one by one (64 in flight): their time
 * and their bytes per job (each with its `submitted` event and audit row).
 */
import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { fmt, pool, post, startBenchServer } from './lib.js';

export interface ArraysResult {
  tasks: number;
  arraySeconds: number;
  bytesPerTask: number;
  singles: number;
  singlesPerSecond: number;
  bytesPerSingle: number;
}

const TASKS = 100_000;
const SINGLES = 10_000;

/** Bytes in use by every table and index of the store (pages × their size, from dbstat). */
function storeBytes(dataDir: string): number {
  const db = new BetterSqlite3(join(dataDir, 'berth.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT sum(pgsize) AS n FROM dbstat').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

export async function runArraysBench(): Promise<ArraysResult> {
  const s = await startBenchServer('factories:\n  local: { kind: local, capacity: 2 }');
  try {
    await post(s.api, s.token, '/cluster-queues', { name: 'held', quota: { jobs: 1 }, stopPolicy: 'Hold' });
    await post(s.api, s.token, '/projects', { name: 'sweep', clusterQueue: 'held' });
    const body = { command: ['./task.sh', '--input', 'data/part'], requests: { cpu: '1' } };

    const before = storeBytes(s.dataDir);
    const t0 = performance.now();
    await post(s.api, s.token, '/projects/sweep/jobs', { ...body, array: `0-${TASKS - 1}%50` });
    const arraySeconds = (performance.now() - t0) / 1000;
    const afterArray = storeBytes(s.dataDir);

    const t1 = performance.now();
    await pool(SINGLES, 64, () => post(s.api, s.token, '/projects/sweep/jobs', body));
    const singlesSeconds = (performance.now() - t1) / 1000;
    const afterSingles = storeBytes(s.dataDir);
    return {
      tasks: TASKS,
      arraySeconds,
      bytesPerTask: (afterArray - before) / TASKS,
      singles: SINGLES,
      singlesPerSecond: SINGLES / singlesSeconds,
      bytesPerSingle: (afterSingles - afterArray) / SINGLES,
    };
  } finally {
    await s.stop();
  }
}

export function printArraysBench(r: ArraysResult): void {
  console.log(
    `  one array of ${fmt(r.tasks)} tasks (a held queue): accepted in ${fmt(r.arraySeconds, 2)} s = ${fmt(r.tasks / r.arraySeconds)} tasks/s; ${fmt(r.bytesPerTask)} bytes per task in the store`,
  );
  console.log(
    `  baseline, ${fmt(r.singles)} jobs submitted one by one (64 in flight): ${fmt(r.singlesPerSecond)}/s; ${fmt(r.bytesPerSingle)} bytes per job (with its event and audit row)`,
  );
  console.log(
    `  ratio array tasks / single jobs: ${fmt(r.tasks / r.arraySeconds / r.singlesPerSecond, 1)}× the rate`,
  );
}
