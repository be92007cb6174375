/** Helpers for job tests over the real HTTP API. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call } from './server.js';
import { waitFor } from './wait.js';

export interface JobView {
  id: number;
  state: string;
  reason: string;
  target: string;
  timeoutSeconds: number | null;
  requests: Record<string, string>;
  exitCode: number | null;
  position: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  cleanedUp: boolean;
  worker: { id: number; state: string } | null;
}

export interface EventItem {
  type: string;
  message: string;
  at: string;
}

const TERMINAL = ['succeeded', 'failed', 'cancelled'];

export async function submit(
  api: string,
  token: string,
  project: string,
  body: Record<string, unknown>,
): Promise<JobView> {
  const r = await call<JobView>(api, token, 'POST', `/projects/${project}/jobs`, body);
  if (r.status !== 201 && r.status !== 200) throw new Error(`submit failed: ${r.status} ${r.text}`);
  return r.body;
}

export async function getJob(api: string, token: string, id: number): Promise<JobView> {
  return (await call<JobView>(api, token, 'GET', `/jobs/${id}`)).body;
}

/** Waits until the job is terminal and its cleanup is confirmed. */
export async function waitDone(api: string, token: string, id: number, timeoutMs = 90_000): Promise<JobView> {
  let last: JobView | undefined;
  try {
    return await waitFor(
      `job ${id} to finish and be cleaned up`,
      async () => {
        const j = (last = await getJob(api, token, id));
        return TERMINAL.includes(j.state) && j.cleanedUp ? j : undefined;
      },
      timeoutMs,
    );
  } catch (e) {
    // Say where the job stood, so a rare hang can be told apart from a slow machine.
    // (An unreachable server answers nothing, or an error object: no timeline then.)
    const answer: unknown = await events(api, token, id).catch(() => []);
    const timeline = Array.isArray(answer) ? (answer as EventItem[]) : [];
    const at =
      last === undefined
        ? 'never read'
        : `${last.state} (${last.reason}), cleanedUp ${String(last.cleanedUp)}, worker ${JSON.stringify(last.worker)}`;
    throw new Error(
      `${(e as Error).message} (last seen: ${at}; events: ${timeline.map((ev) => ev.type).join(' ')})`,
    );
  }
}

export async function events(api: string, token: string, id: number): Promise<EventItem[]> {
  return (await call<EventItem[]>(api, token, 'GET', `/jobs/${id}/events`)).body;
}

/** The timeline of a job evicted once (preempted or drained), run again, and succeeded. */
export const EVICTED_ONCE_THEN_SUCCEEDED = [
  'submitted',
  'admitted',
  'worker-creating',
  'started',
  'requeued',
  'admitted',
  'worker-creating',
  'started',
  'succeeded',
];

export interface QuietJob {
  id: number;
  /** The job's token (BERTH_TOKEN), once the job has written it. */
  token(): Promise<string>;
  /** Lets the job end (it exits 0). */
  release(): void;
}

/**
 * A job in `project` that stays running, printing nothing, until `release()`. It writes its job
 * token to a file in `scratch` first, so that a test can speak for its agent (or for code that
 * holds the token). Resolves once the job runs.
 */
export async function quietJob(
  api: string,
  token: string,
  project: string,
  scratch: string,
  name: string,
): Promise<QuietJob> {
  const gate = join(scratch, `${name}.gate`);
  const tokenFile = join(scratch, `${name}.token`);
  const job = await submit(api, token, project, {
    script: `printf %s "$BERTH_TOKEN" > ${tokenFile}.tmp; mv ${tokenFile}.tmp ${tokenFile}; while [ ! -e ${gate} ]; do sleep 0.05; done`,
  });
  await waitFor(`job ${job.id} to run`, async () => (await getJob(api, token, job.id)).state === 'running');
  return {
    id: job.id,
    token: () =>
      waitFor(`job ${job.id}'s token`, () => existsSync(tokenFile) && readFileSync(tokenFile, 'utf8')),
    release: () => writeFileSync(gate, ''),
  };
}
