/** `berth artifacts JOB`: the files a job kept, and `--get NAME` to download one. */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { formatBytes, type ArtifactView } from '../../domain/artifact.js';
import { formatSpan } from '../duration.js';
import { CliError, UsageError } from '../errors.js';
import { jobId, positiveInteger } from '../flags.js';
import { inProject, jobPath } from '../job-watch.js';
import type { Job } from '../api-types.js';
import { outputWidth, table } from '../output.js';
import { readPages } from '../pages.js';
import { clientCommand, examples, openSession, type CommonFlags, type Session } from '../session.js';

interface ArtifactFlags extends CommonFlags {
  get?: string;
  out?: string;
  force?: boolean;
  attempt?: number;
}

/** The download's path: the name's slashes kept, each part encoded. */
const downloadPath = (id: number, name: string): string =>
  `${jobPath(id)}/artifacts/${name.split('/').map(encodeURIComponent).join('/')}`;

function artifactTable(artifacts: ArtifactView[], now: number): string {
  return table(
    ['NAME', 'ATTEMPT', 'SIZE', 'CREATED'],
    artifacts.map((a) => [
      a.name,
      a.attempt,
      formatBytes(a.size),
      `${formatSpan(now - Date.parse(a.createdAt))} ago`,
    ]),
    outputWidth(),
  );
}

async function list(s: Session, id: number, attempt: number | undefined): Promise<void> {
  // Every page: a job may keep thousands of files over its runs.
  const all = await readPages<ArtifactView>(s.client, `${jobPath(id)}/artifacts`);
  const artifacts = attempt === undefined ? all : all.filter((a) => a.attempt === attempt);
  s.show(artifacts, () => {
    if (artifacts.length > 0) return artifactTable(artifacts, Date.now());
    return `job ${id} kept no artifacts${attempt === undefined ? '' : ` in attempt ${attempt}`}`;
  });
}

/**
 * Downloads `name` to `out` (a file, or `-` for stdout): through a temporary file beside it,
 * renamed once complete and checked against the server's SHA-256, so a failed download leaves
 * nothing behind and never half of a file.
 */
async function get(s: Session, id: number, name: string, f: ArtifactFlags): Promise<void> {
  const out = f.out ?? basename(name);
  const toStdout = out === '-';
  const target = resolve(out);
  if (!toStdout && existsSync(target) && !f.force)
    throw new CliError(`${out} already exists: give --force to overwrite it, or --out FILE`);
  const res = await s.client.stream('GET', downloadPath(id, name), {
    query: { attempt: f.attempt },
    headers: { accept: 'application/octet-stream, application/json' },
  });
  const expected = res.headers.get('x-artifact-sha256');
  const hash = createHash('sha256');
  let size = 0;
  const count = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      hash.update(chunk);
      done(null, chunk);
    },
  });
  const body = res.body ? Readable.fromWeb(res.body) : Readable.from([]);
  const temp = join(dirname(target), `.${basename(target)}.${randomBytes(4).toString('hex')}.part`);
  const sink: Writable = toStdout ? process.stdout : createWriteStream(temp, { flags: 'wx' });
  try {
    await pipeline(body, count, sink, { end: !toStdout });
    const sha256 = hash.digest('hex');
    if (expected && expected !== sha256)
      throw new CliError(
        `the download of ${name} is corrupt: its SHA-256 is ${sha256}, the server's ${expected}`,
      );
    if (!toStdout) await rename(temp, target);
  } catch (e) {
    if (!toStdout) await rm(temp, { force: true });
    if (e instanceof CliError) throw e;
    throw new CliError(`cannot download ${name}: ${(e as Error).message}`);
  }
  if (toStdout) return;
  const attempt = Number(res.headers.get('x-artifact-attempt'));
  const saved = { name, attempt, size, sha256: expected, savedTo: target };
  s.show(saved, () => `saved ${name} (attempt ${attempt}, ${formatBytes(size)}) to ${out}`);
}

export function registerArtifactCommands(program: Command): void {
  const cmd = clientCommand(
    program,
    'artifacts',
    "list a job's artifacts (the files it kept), or download one",
    { project: true },
  )
    .argument('<job>', 'job id', jobId)
    .option('--get <name>', 'download this artifact (a name as listed, e.g. results/a.csv)')
    .option('--out <file>', "where --get saves it (default: the name's last part, here); - for stdout")
    .option('--force', 'let --get overwrite an existing file')
    .option(
      '--attempt <k>',
      'the artifacts of this attempt (default: --get takes the latest)',
      positiveInteger,
    );
  examples(cmd, [
    'berth artifacts 12',
    'berth artifacts 12 -o json',
    'berth artifacts 12 --get results/a.csv                # saved as ./a.csv',
    'berth artifacts 12 --get results/a.csv --out - | head',
    'berth artifacts 12 --get model.bin --attempt 1 --out model-1.bin --force',
    "berth submit --artifact 'results/*.csv' --wait -- ./experiment.sh",
  ]).action(async (id: number, f: ArtifactFlags) => {
    if (f.get === undefined && (f.out !== undefined || f.force))
      throw new UsageError('--out and --force go with --get NAME');
    const s = openSession(f);
    if (f.project !== undefined) inProject(await s.client.get<Job>(jobPath(id)), f.project);
    if (f.get === undefined) return list(s, id, f.attempt);
    return get(s, id, f.get, f);
  });
}
