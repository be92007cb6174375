/** `berth port-forward` as the tests drive it: on the local factory and on Slurm alike. */
import assert from 'node:assert/strict';
import { waitFor } from '../helpers/wait.js';
import { startBerth, type RunningBerth, type Sandbox } from './cli.js';

export interface Page {
  status: number;
  text: string;
}

/** `berth port-forward JOB 0:REMOTE` running, and a GET of /page.txt through its local port. */
export async function forwarded(
  sb: Sandbox,
  job: number,
  remote: number,
  env: Record<string, string>,
): Promise<{ forward: RunningBerth; get: () => Promise<Page> }> {
  const forward = startBerth(sb, ['port-forward', String(job), `0:${remote}`], { env });
  await forward.shows('stdout', '(^C to stop)');
  const port = await waitFor('the local port', () => /127\.0\.0\.1:(\d+)/.exec(forward.out().stdout)?.[1]);
  const get = async () => {
    const r = await fetch(`http://127.0.0.1:${port}/page.txt`);
    return { status: r.status, text: await r.text() };
  };
  return { forward, get };
}

/**
 * Once the server inside answers `text` — until it listens, a connection is closed saying so: asked
 * again, to a deadline — `n` requests at once, each answered on its first try.
 */
export async function servesAll(get: () => Promise<Page>, text: string, n: number): Promise<void> {
  const first = await waitFor('the server in the job to answer', () => get().catch(() => undefined));
  assert.deepEqual(first, { status: 200, text });
  const all = await Promise.all(Array.from({ length: n }, get));
  assert.ok(
    all.every((r) => r.status === 200 && r.text === text),
    JSON.stringify(all),
  );
}
