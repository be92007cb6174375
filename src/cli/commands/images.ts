/** `berth images`, `berth images prune`: the OCI images cached on the machine that runs the jobs (admins). */
import type { Command } from 'commander';
import { formatBytes } from '../../domain/artifact.js';
import type { CachedImageView } from '../../domain/image.js';
import { formatSpan } from '../duration.js';
import { table } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

/** `sha256:0123456789ab`: enough of a digest to tell images apart, as `docker images` shows. */
const shortDigest = (digest: string): string => digest.slice(0, 'sha256:'.length + 12);

/**
 * The images as a table with a line of their count and size after it (`"3 images, 1.2 GiB"`,
 * `verb` before it), or `none` when there are none.
 */
function imagesText(images: CachedImageView[], verb: string, none: string): string {
  if (images.length === 0) return none;
  const now = Date.now();
  const rows = images.map((i) => [
    i.reference ?? '-',
    shortDigest(i.digest),
    formatBytes(i.bytes),
    `${formatSpan(Math.max(0, now - Date.parse(i.lastUsedAt)))} ago`,
    i.jobs.length === 0 ? '-' : i.jobs.join(','),
  ]);
  const bytes = formatBytes(images.reduce((n, i) => n + i.bytes, 0));
  const count = `${images.length} image${images.length === 1 ? '' : 's'}`;
  return `${table(['REFERENCE', 'DIGEST', 'SIZE', 'LAST USED', 'JOBS'], rows)}\n${verb}${count}, ${bytes}`;
}

export function registerImagesCommand(program: Command): void {
  const images = clientCommand(
    program,
    'images',
    'list the OCI images cached on the machine that runs the jobs, least recently used first (admins; docs/IMAGES.md)',
  ).action(async (f: CommonFlags) => {
    const s = openSession(f);
    const list = await s.client.get<CachedImageView[]>('/images');
    s.show(list, () =>
      imagesText(list, '', 'no images are cached (jobs ask for one with berth submit --image REF)'),
    );
  });
  examples(images, ['berth images', 'berth images -o json | jq ".[].digest"', 'berth images prune']);
  clientCommand(
    images,
    'prune',
    'remove every cached image no job holds now (pulled again when a job asks for it)',
  ).action(async (f: CommonFlags) => {
    const s = openSession(f);
    const removed = await s.client.post<CachedImageView[]>('/images/prune');
    s.show(removed, () =>
      imagesText(
        removed,
        'removed ',
        'nothing to remove: every cached image is held by a job, or none is cached',
      ),
    );
  });
}
