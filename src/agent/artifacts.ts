/**
 * A job's artifacts, on the agent's side: once the command has ended (exited or timed out, not
 * when it was stopped), the files of the working directory that the job's patterns match are
 * uploaded one at a time, streamed, before the agent reports the job's end. Only regular files
 * inside the working directory are kept: a symbolic link, or a path through one, is not, and
 * each file is opened without following any (beneath.ts), since the agent reads as root. What is not kept is said in the job's log, one line per file; it never changes
 * the job's outcome. In a gang job only rank 0 keeps artifacts (the server gives it the patterns).
 */
import { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { glob } from 'tinyglobby';
import { NotBeneathError, openBeneath, type OpenedFile } from './beneath.js';
import type { AgentClient } from './client.js';
import { errorMessage, httpPostStream, RATE_LIMITED_PAUSE_MS } from './http-post.js';
import { AGENT_RETRY_MAX_DELAY_MS, JOB_SELF, type HeartbeatResponse } from './protocol.js';
import { isCertificateError } from './trust.js';

export interface ArtifactOptions {
  url: string;
  token: string;
  workdir: string;
  /**
   * The job's own uid, when it ran under one: only files it owns are kept. A hard link it made to
   * a file of someone else's (the agent reads as root) is not its file.
   */
  owner?: number;
  patterns: readonly string[];
  /** Calls the server (heartbeats while the uploads take long). */
  client: AgentClient;
  /** The job's log: one line per file not kept. */
  log: (line: string) => void;
  heartbeatSeconds: number;
  /** How long to keep trying while the server cannot be reached (as for the other calls). */
  retryForMs?: number;
}

/**
 * The names the patterns match (relative, with `/`), and a line for each pattern not used. The
 * walk only names candidates: each is opened beneath the working directory, and checked, when it
 * is uploaded (beneath.ts), so a name whose file was swapped for a link since is not followed.
 */
export async function matchArtifacts(
  workdir: string,
  patterns: readonly string[],
): Promise<{ names: string[]; refused: string[] }> {
  const refused: string[] = [];
  // The server refuses such patterns; an agent keeps to its directory whatever it is told.
  const usable = patterns.filter((p) => {
    const outside = p.startsWith('/') || p.split('/').includes('..');
    if (outside) refused.push(`pattern ${JSON.stringify(p)} leads outside the working directory`);
    return !outside;
  });
  const names = await glob(usable, {
    cwd: workdir,
    onlyFiles: true,
    followSymbolicLinks: false,
    expandDirectories: false,
  });
  return { names: [...new Set(names)].sort(), refused };
}

/**
 * Uploads what the patterns match. Stops early (saying so) when the server asks the job to stop
 * meanwhile, since the server waits only so long for a job told to stop. Never throws.
 */
export async function uploadArtifacts(o: ArtifactOptions): Promise<void> {
  let matched: Awaited<ReturnType<typeof matchArtifacts>>;
  try {
    matched = await matchArtifacts(o.workdir, o.patterns);
  } catch (e) {
    o.log(`berth: artifacts not kept: cannot search the working directory: ${(e as Error).message}\n`);
    return;
  }
  for (const line of matched.refused) o.log(`berth: ${line}\n`);
  let stopped: string | undefined;
  // Heartbeats go on while the files go up: a large one may take longer than the deadline.
  const beat = setInterval(
    () => {
      o.client
        .post<HeartbeatResponse>('/heartbeat?wait=0&rank=0')
        .then((r) => {
          if (r?.cancel) stopped ??= r.reason ?? 'stopped';
        })
        .catch(() => {});
    },
    Math.max(1000, (o.heartbeatSeconds * 1000) / 3),
  );
  try {
    for (const [i, name] of matched.names.entries()) {
      if (stopped !== undefined) {
        const left = matched.names.length - i;
        o.log(`berth: ${left} artifact${left === 1 ? '' : 's'} not kept: the job was stopped (${stopped})\n`);
        break;
      }
      const problem = await uploadOne(o, name);
      if (problem) o.log(`berth: artifact ${name} not kept: ${problem}\n`);
    }
  } finally {
    clearInterval(beat);
  }
}

/** Opens the file (never by a link, checked on its descriptor), uploads it, closes it. */
async function uploadOne(o: ArtifactOptions, name: string): Promise<string | undefined> {
  let file: OpenedFile;
  try {
    file = await openBeneath(o.workdir, name, o.owner);
  } catch (e) {
    if (e instanceof NotBeneathError) return e.reason;
    throw e;
  }
  try {
    return await upload(o, name, file);
  } finally {
    await file.handle.close();
  }
}

/**
 * One upload, tried again while the server cannot be reached or answers 5xx (a restart), as the
 * agent's other calls are. Every try reads the same open descriptor from its start. Returns why
 * the file was not kept, or undefined when it was.
 */
async function upload(o: ArtifactOptions, name: string, file: OpenedFile): Promise<string | undefined> {
  const url = `${o.url.replace(/\/$/, '')}${JOB_SELF}/artifacts?name=${encodeURIComponent(name)}`;
  const headers = { authorization: `Bearer ${o.token}`, 'content-type': 'application/octet-stream' };
  const deadline = Date.now() + (o.retryForMs ?? 60_000);
  for (let attempt = 0; ; attempt++) {
    // The bytes it had when it was matched: a file that grew since is cut there.
    let unreadable: NodeJS.ErrnoException | undefined;
    const body =
      file.size === 0
        ? Readable.from([])
        : file.handle.createReadStream({ start: 0, end: file.size - 1, autoClose: false });
    body.once('error', (e: NodeJS.ErrnoException) => (unreadable ??= e));
    let last: string;
    try {
      const res = await httpPostStream(url, headers, body, file.size);
      if (res.status < 300) return undefined;
      last = errorMessage(res.text);
      if (res.status === 429) {
        // The job's own calls used its token's budget: the server is there; wait, then again.
        await delay(RATE_LIMITED_PAUSE_MS);
        attempt = -1;
        continue;
      }
      if (res.status < 500) return last;
    } catch (e) {
      if (unreadable) return `cannot read it (${unreadable.code ?? unreadable.message})`;
      if (isCertificateError(e)) return `cannot verify the server's TLS certificate: ${(e as Error).message}`;
      last = `the server cannot be reached: ${(e as Error).message}`;
    }
    if (Date.now() > deadline) return last;
    await delay(Math.min(AGENT_RETRY_MAX_DELAY_MS, 50 * 2 ** attempt));
  }
}
