/**
 * `npm run bench -- flood` (issue #19): one client floods the API with submissions (64 in flight,
 * its own token, into a held queue) while another submits no-op jobs one at a time through the
 * local factory and measures submit → running (the job's createdAt to startedAt, both the
 * server's clock). Three phases in one run, each on a fresh server: idle (no flood), a flood
 * with the rate limit off, and a flood with the default rate limit per token. The target: with
 * the flood, the other client's latency stays within 2× of the idle server's.
 *
 * Then the same with a job as the flooder (issue #39): a running job's token (BERTH_TOKEN, which
 * its code holds) uploads output as fast as 64 requests in flight allow — each a write to the log
 * store — without and with the default `rateLimit.jobRequestsPerSecond`. The target: the other
 * tenant's median within 1.5× of idle.
 */
import { mkdtempSync, readFileSync, rmSync, chmodSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_JOB_REQUESTS_PER_SECOND, DEFAULT_REQUESTS_PER_SECOND } from '../src/config/load.js';
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

/** Who floods: a user's token submitting jobs, or a running job's token uploading output. */
type Flooder = 'none' | 'user' | 'job';

/** A job of project `flooder` that runs until the phase ends; resolves with its token. */
async function floodingJob(s: BenchServer, dir: string): Promise<string> {
  const file = join(dir, 'token');
  await post(s.api, s.token, '/projects/jobflood/jobs', {
    script: `printf %s "$BERTH_TOKEN" > ${file}.tmp; mv ${file}.tmp ${file}; while [ ! -e ${dir}/stop ]; do sleep 0.1; done`,
  });
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    if (existsSync(file)) return readFileSync(file, 'utf8');
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the flooding job did not start within 30 s');
}

async function phase(
  name: string,
  jobs: number,
  flooder: Flooder,
  requestsPerSecond: number,
  jobRequestsPerSecond = DEFAULT_JOB_REQUESTS_PER_SECOND,
): Promise<FloodPhase> {
  const flood = flooder !== 'none';
  const s = await startBenchServer(
    [
      'factories:',
      '  local: { kind: local, capacity: 2 }',
      `rateLimit: { requestsPerSecond: ${requestsPerSecond}, jobRequestsPerSecond: ${jobRequestsPerSecond} }`,
    ].join('\n'),
  );
  // Where the flooding job leaves its token and the bench its stop: every job's uid may enter.
  const dir = mkdtempSync('/var/tmp/berth-bench-flood-');
  chmodSync(dir, 0o1777);
  try {
    await post(s.api, s.token, '/cluster-queues', { name: 'work', quota: { jobs: 100 } });
    await post(s.api, s.token, '/cluster-queues', {
      name: 'parking',
      quota: { jobs: 1 },
      stopPolicy: 'Hold',
    });
    await post(s.api, s.token, '/projects', { name: 'victim', clusterQueue: 'work' });
    await post(s.api, s.token, '/projects', { name: 'flooder', clusterQueue: 'parking' });
    await post(s.api, s.token, '/projects', { name: 'jobflood', clusterQueue: 'work' });
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
    const jobToken = flooder === 'job' ? await floodingJob(s, dir) : '';
    const line = Buffer.from('flood\n');
    const once = () =>
      flooder === 'job'
        ? post(s.api, jobToken, '/job/self/logs', line, 'application/octet-stream')
        : post(s.api, token, '/projects/flooder/jobs', { command: ['true'] });
    let running = flood;
    const floodStart = performance.now();
    let accepted = 0;
    let refused = 0;
    const flooders = flood
      ? Array.from({ length: FLOOD_CONCURRENCY }, async () => {
          while (running) {
            try {
              await once();
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
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runFloodBench(
  jobs = Number(process.env.BENCH_FLOOD_JOBS) || 100,
): Promise<FloodResult> {
  return {
    jobs,
    phases: [
      await phase('idle', jobs, 'none', DEFAULT_REQUESTS_PER_SECOND),
      await phase('flood, no rate limit', jobs, 'user', 0),
      await phase(
        `flood, rate limit ${DEFAULT_REQUESTS_PER_SECOND}/s per token (the default)`,
        jobs,
        'user',
        DEFAULT_REQUESTS_PER_SECOND,
      ),
      await phase("a job floods its token, no job's limit", jobs, 'job', DEFAULT_REQUESTS_PER_SECOND, 0),
      await phase(
        `a job floods its token, ${DEFAULT_JOB_REQUESTS_PER_SECOND}/s per job (the default)`,
        jobs,
        'job',
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
