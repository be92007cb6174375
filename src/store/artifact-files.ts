/**
 * Artifacts' bytes on disk: `<dir>/<jobId>/<attempt>/<name>`. An upload is written to a file of
 * its own under `<dir>/<jobId>/.incoming/` while it streams (counted and hashed on the way), then
 * renamed into place, so a reader never sees half a file and a failed upload leaves nothing.
 * On PostgreSQL every replica reads the same directory: it must be shared (docs/DEPLOYMENT.md).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** What was written: its size and its SHA-256 (hex). */
export interface WrittenFile {
  size: number;
  sha256: string;
}

/** Thrown by `write` when a body grows past its limit; nothing is kept then. */
export class OverLimit extends Error {
  constructor(readonly limit: number) {
    super(`more than ${limit} bytes`);
  }
}

/** An artifact to read: its stream, opened (a missing file is known before anything is sent). */
export interface OpenedFile {
  stream: Readable;
}

const INCOMING = '.incoming';

export class ArtifactFiles {
  constructor(readonly dir: string) {}

  /** Makes the directory (at start: a directory that cannot be made stops the server). */
  async prepare(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
  }

  /** Where a kept file lives. Names are checked (domain/artifact.ts); this check is the last line. */
  path(jobId: number, attempt: number, name: string): string {
    const base = join(this.dir, String(jobId), String(attempt));
    const path = join(base, ...name.split('/'));
    const rel = relative(base, path);
    if (rel === '' || rel.startsWith('..') || rel.split(sep).includes('..'))
      throw new Error(`artifact name ${JSON.stringify(name)} leaves its directory`);
    return path;
  }

  /**
   * Streams `body` into the run's file `name`, replacing one of that name. Rejects with OverLimit
   * once more than `limit` bytes have come (and keeps nothing).
   */
  async write(
    jobId: number,
    attempt: number,
    name: string,
    body: Readable,
    limit: number,
  ): Promise<WrittenFile> {
    const target = this.path(jobId, attempt, name);
    const incoming = join(this.dir, String(jobId), INCOMING);
    await mkdir(incoming, { recursive: true, mode: 0o700 });
    const temp = join(incoming, randomBytes(12).toString('hex'));
    const hash = createHash('sha256');
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        if (size > limit) return done(new OverLimit(limit));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    // The body is piped, not part of the pipeline: a failure here must not destroy it, since for
    // an HTTP request that would close the connection before the refusal could be answered.
    const cutOff = () => {
      if (!body.readableEnded) count.destroy(new Error('the upload was cut off'));
    };
    body.once('error', (e) => count.destroy(e)).once('close', cutOff);
    body.pipe(count);
    try {
      await pipeline(count, createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
      await mkdir(dirname(target), { recursive: true, mode: 0o700 });
      await rename(temp, target);
    } catch (e) {
      await rm(temp, { force: true });
      throw e;
    } finally {
      body.unpipe(count).off('close', cutOff);
    }
    return { size, sha256: hash.digest('hex') };
  }

  /** Opens a kept file for reading; undefined when it is not on disk. */
  async open(jobId: number, attempt: number, name: string): Promise<OpenedFile | undefined> {
    try {
      const handle = await open(this.path(jobId, attempt, name), 'r');
      return { stream: handle.createReadStream() };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  /** Removes everything a job kept. */
  async remove(jobId: number): Promise<void> {
    await rm(join(this.dir, String(jobId)), { recursive: true, force: true });
  }

  /** The jobs that have a directory here. */
  async jobIds(): Promise<number[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    return names.filter((n) => /^[1-9][0-9]{0,15}$/.test(n)).map(Number);
  }
}
