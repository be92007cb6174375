/**
 * (b) API: job submissions per second over HTTP. The server runs in its own process (one core);
 * this process is the load generator on the other core. The queue is on Hold, so the figure is
 * the cost of submission itself (validation, auth, one transaction with its event), not of
 * running jobs.
 */
import { fmt, pool, post, startBenchServer } from './lib.js';

export interface ApiBenchResult {
  submissions: number;
  concurrency: number;
  seconds: number;
  submissionsPerSecond: number;
}

export async function runApiBench(n = 20_000, concurrency = 64): Promise<ApiBenchResult> {
  const s = await startBenchServer('factories:\n  local: { kind: local, capacity: 1 }\n');
  try {
    await post(s.api, s.token, '/cluster-queues', {
      name: 'bench',
      quota: { cpu: '1000' },
      stopPolicy: 'Hold',
    });
    await post(s.api, s.token, '/projects', { name: 'bench', clusterQueue: 'bench' });
    const body = { command: ['true'], requests: { cpu: '1' } };
    await pool(500, concurrency, () => post(s.api, s.token, '/projects/bench/jobs', body)); // warm-up
    const t0 = performance.now();
    await pool(n, concurrency, () => post(s.api, s.token, '/projects/bench/jobs', body));
    const seconds = (performance.now() - t0) / 1000;
    return { submissions: n, concurrency, seconds, submissionsPerSecond: n / seconds };
  } finally {
    await s.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await runApiBench();
  console.log(
    `api: ${fmt(r.submissions)} submissions over HTTP (${r.concurrency} in flight) in ${fmt(r.seconds, 2)} s = ${fmt(r.submissionsPerSecond)}/s`,
  );
}
