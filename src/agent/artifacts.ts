/**
 * A job's artifacts, on the agent's side: once the command has ended (exited or timed out, not
 * when it was stopped), the files of the working directory that the job's patterns match are
 * uploaded one at a time, streamed, before the agent reports the job's end. Only regular files
 * inside the working directory are kept: a symbolic link, or a path through one that leads
 * outside, is not. What is not kept is said in the job's log, one line per file; it never changes
 * the job's outcome. In a gang job only rank 0 keeps artifacts (the server gives it the patterns).
 */
import { createReadStream } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { glob } from 'tinyglobby';
import type { AgentClient } from './client.js';
import { errorMessage, httpPostStream } from './http-post.js';
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

/** A file to upload: its name (relative, with `/`), where it is, and its size. */
export interface ArtifactFile {
  name: string;
  path: string;
  size: number;
}

/** The files the patterns match, and a line for each match that is not kept. */
export async function matchArtifacts(
  workdir: string,
  patterns: readonly string[],
  owner?: number,
): Promise<{ files: ArtifactFile[]; refused: string[] }> {
  const root = await realpath(workdir);
  const refused: string[] = [];
  // The server refuses such patterns; an agent keeps to its directory whatever it is told.
  const usable = patterns.filter((p) => {
    const outside = p.startsWith('/') || p.split('/').includes('..');
    if (outside) refused.push(`pattern ${JSON.stringify(p)} leads outside the working directory`);
    return !outside;
  });
  const names = await glob(usable, {
    cwd: root,
    onlyFiles: true,
    followSymbolicLinks: false,
    expandDirectories: false,
  });
  const files: ArtifactFile[] = [];
  for (const name of [...new Set(names)].sort()) {
    const path = join(root, name);
    const why = await notKept(root, path, owner);
    if (why) refused.push(`artifact ${name} not kept: ${why}`);
    else files.push({ name, path, size: (await lstat(path)).size });
  }
  return { files, refused };
}

/** Why the match at `path` cannot be kept, or undefined when it can. */
async function notKept(root: string, path: string, owner?: number): Promise<string | undefined> {
  try {
    const stat = await lstat(path);
    if (stat.isSymbolicLink()) return 'a symbolic link (only regular files are kept)';
    if (!stat.isFile()) return 'not a regular file';
    if (owner !== undefined && stat.uid !== owner) return "not the job's own file";
    // A directory on the way may be a link that leads elsewhere.
    if (!(await realpath(path)).startsWith(root + sep)) return 'it lies outside the working directory';
    return undefined;
  } catch (e) {
    return `cannot read it (${(e as NodeJS.ErrnoException).code ?? String(e)})`;
  }
}

/**
 * Uploads what the patterns match. Stops early (saying so) when the server asks the job to stop
 * meanwhile, since the server waits only so long for a job told to stop. Never throws.
 */
export async function uploadArtifacts(o: ArtifactOptions): Promise<void> {
  let matched: Awaited<ReturnType<typeof matchArtifacts>>;
  try {
    matched = await matchArtifacts(o.workdir, o.patterns, o.owner);
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
    for (const [i, file] of matched.files.entries()) {
      if (stopped !== undefined) {
        const left = matched.files.length - i;
        o.log(`berth: ${left} artifact${left === 1 ? '' : 's'} not kept: the job was stopped (${stopped})\n`);
        break;
      }
      const problem = await upload(o, file);
      if (problem) o.log(`berth: artifact ${file.name} not kept: ${problem}\n`);
    }
  } finally {
    clearInterval(beat);
  }
}

/** A file error (not the network's): it carries the file's path. */
const isFileError = (e: unknown, path: string): boolean => (e as NodeJS.ErrnoException).path === path;

/**
 * One upload, tried again while the server cannot be reached or answers 5xx (a restart), as the
 * agent's other calls are. Returns why the file was not kept, or undefined when it was.
 */
async function upload(o: ArtifactOptions, file: ArtifactFile): Promise<string | undefined> {
  const url = `${o.url.replace(/\/$/, '')}${JOB_SELF}/artifacts?name=${encodeURIComponent(file.name)}`;
  const headers = { authorization: `Bearer ${o.token}`, 'content-type': 'application/octet-stream' };
  const deadline = Date.now() + (o.retryForMs ?? 60_000);
  for (let attempt = 0; ; attempt++) {
    // The bytes it had when it was matched: a file that grew since is cut there.
    const body =
      file.size === 0 ? Readable.from([]) : createReadStream(file.path, { start: 0, end: file.size - 1 });
    let last: string;
    try {
      const res = await httpPostStream(url, headers, body, file.size);
      if (res.status < 300) return undefined;
      last = errorMessage(res.text);
      if (res.status < 500) return last;
    } catch (e) {
      if (isFileError(e, file.path)) return `cannot read it (${(e as NodeJS.ErrnoException).code ?? ''})`;
      if (isCertificateError(e)) return `cannot verify the server's TLS certificate: ${(e as Error).message}`;
      last = `the server cannot be reached: ${(e as Error).message}`;
    }
    if (Date.now() > deadline) return last;
    await delay(Math.min(AGENT_RETRY_MAX_DELAY_MS, 50 * 2 ** attempt));
  }
}
