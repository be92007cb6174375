/**
 * `npm run bench -- flood` (issue #19): one client floods the API with submissions (64 in flight,
 * its own token, into a held queue) while another submits no-op jobs one at a time through the
 * local factory and measures submit → running (the job's createdAt to startedAt, both the
 * server's clock). Three phases in one run, each on a fresh server: idle (no flood), a flood
 * with the rate limit off, and a flood with the default rate limit per token. The target: with
 * the flood, the other client's latency stays within 2× of the idle server's.
 */
import { DEFAULT_REQUESTS_PER_SECOND } from '../src/config/load.js';
import { fmt, get, post, startBenchServer, type BenchServer } from './lib.js';

export interface FloodPhase {
  name: string;
  medianMs: number;
  p90Ms: number;
  /** The flooder's submissions accepted and refused (429) per second. */
  acceptedPerSecond: number;
  refusedPerSecond: number;
}

export interface FloodResult {
  jobs: number;
  phases: FloodPhase[];
}

const FLOOD_CONCURRENCY = 64;

interface JobTimes {
  state: string;
  createdAt: string;
  startedAt: string | null;
}

/** Submit → running of one no-op job in `project`, in ms (server clock). */
export async function submitToRunning(s: BenchServer, project = 'victim'): Promise<number> {
  const job = (await post(s.api, s.token, `/projects/${project}/jobs`, { command: ['true'] })) as {
    id: number;
  };
  for (;;) {
    const j = await get<JobTimes>(s.api, s.token, `/jobs/${job.id}`);
    if (j.startedAt) return Date.parse(j.startedAt) - Date.parse(j.createdAt);
    if (['failed', 'cancelled'].includes(j.state)) throw new Error(`job ${job.id} ${j.state}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const quantile = (xs: number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

async function phase(
  name: string,
  jobs: number,
  flood: boolean,
  requestsPerSecond: number,
): Promise<FloodPhase> {
  const s = await startBenchServer(
    [
      'factories:',
      '  local: { kind: local, capacity: 2 }',
      `rateLimit: { requestsPerSecond: ${requestsPerSecond} }`,
    ].join('\n'),
  );
  try {
    await post(s.api, s.token, '/cluster-queues', { name: 'work', quota: { jobs: 100 } });
    await post(s.api, s.token, '/cluster-queues', {
      name: 'parking',
      quota: { jobs: 1 },
      stopPolicy: 'Hold',
    });
    await post(s.api, s.token, '/projects', { name: 'victim', clusterQueue: 'work' });
    await post(s.api, s.token, '/projects', { name: 'flooder', clusterQueue: 'parking' });
    await post(s.api, s.token, '/users', { name: 'flooder' });
    const token = ((await post(s.api, s.token, '/users/flooder/tokens', {})) as { token: string }).token;
    await new Promise<void>((resolve, reject) => {
      // PUT through fetch: bench/lib's post is POST only.
      fetch(`${s.api}/projects/flooder/members/flooder`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ role: 'member' }),
      }).then((r) => (r.ok ? resolve() : reject(new Error(`member: ${r.status}`))), reject);
    });
    let running = flood;
    const floodStart = performance.now();
    let accepted = 0;
    let refused = 0;
    const flooders = flood
      ? Array.from({ length: FLOOD_CONCURRENCY }, async () => {
          while (running) {
            try {
              await post(s.api, token, '/projects/flooder/jobs', { command: ['true'] });
              accepted++;
            } catch {
              refused++;
            }
          }
        })
      : [];
    // Let the flood reach its pace before measuring.
    if (flood) await new Promise((r) => setTimeout(r, 1000));
    const latencies: number[] = [];
    for (let i = 0; i < jobs; i++) latencies.push(await submitToRunning(s));
    running = false;
    await Promise.all(flooders);
    // Over the whole flood: a window of the rate limit is a second long.
    const seconds = (performance.now() - floodStart) / 1000;
    return {
      name,
      medianMs: quantile(latencies, 0.5),
      p90Ms: quantile(latencies, 0.9),
      acceptedPerSecond: accepted / seconds,
      refusedPerSecond: refused / seconds,
    };
  } finally {
    await s.stop();
  }
}

export async function runFloodBench(
  jobs = Number(process.env.BENCH_FLOOD_JOBS) || 100,
): Promise<FloodResult> {
  return {
    jobs,
    phases: [
      await phase('idle', jobs, false, DEFAULT_REQUESTS_PER_SECOND),
      await phase('flood, no rate limit', jobs, true, 0),
      await phase(
        `flood, rate limit ${DEFAULT_REQUESTS_PER_SECOND}/s per token (the default)`,
        jobs,
        true,
        DEFAULT_REQUESTS_PER_SECOND,
      ),
    ],
  };
}

export function printFloodBench(r: FloodResult): void {
  const idle = r.phases[0]!;
  console.log(
    `  ${r.jobs} no-op jobs of the measuring client, one at a time; the flood: ${FLOOD_CONCURRENCY} submissions in flight`,
  );
  for (const p of r.phases) {
    const flood =
      p === idle
        ? ''
        : `; flood accepted ${fmt(p.acceptedPerSecond)}/s, refused ${fmt(p.refusedPerSecond)}/s`;
    console.log(
      `  ${p.name.padEnd(52)} submit → running median ${fmt(p.medianMs, 1)} ms (${fmt(p.medianMs / idle.medianMs, 2)}× idle), p90 ${fmt(p.p90Ms, 1)} ms${flood}`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printFloodBench(await runFloodBench());
