/** `berth images`, `berth images prune`: the OCI images cached on the machine that runs the jobs (admins). */
import type { Command } from 'commander';
import { formatBytes } from '../../domain/artifact.js';
import type { CachedImageView } from '../../domain/image.js';
import { formatSpan } from '../duration.js';
import { table } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

/** `sha256:0123456789ab`: enough of a digest to tell images apart, as `docker images` shows. */
const shortDigest = (digest: string): string => digest.slice(0, 'sha256:'.length + 12);

function imageTable(images: CachedImageView[], now: number): string {
  return table(
    ['REFERENCE', 'DIGEST', 'SIZE', 'LAST USED', 'JOBS'],
    images.map((i) => [
      i.reference ?? '-',
      shortDigest(i.digest),
      formatBytes(i.bytes),
      `${formatSpan(Math.max(0, now - Date.parse(i.lastUsedAt)))} ago`,
      i.jobs.length === 0 ? '-' : i.jobs.join(','),
    ]),
  );
}

export function registerImagesCommand(program: Command): void {
  const images = clientCommand(
    program,
    'images',
    'list the OCI images cached on the machine that runs the jobs, least recently used first (admins; docs/IMAGES.md)',
  ).action(async (f: CommonFlags) => {
    const s = openSession(f);
    const list = await s.client.get<CachedImageView[]>('/images');
    s.show(list, () => {
      if (list.length === 0) return 'no images are cached (jobs ask for one with berth submit --image REF)';
      const total = list.reduce((n, i) => n + i.bytes, 0);
      return `${imageTable(list, Date.now())}\n${list.length} image${list.length === 1 ? '' : 's'}, ${formatBytes(total)}`;
    });
  });
  examples(images, ['berth images', 'berth images -o json | jq ".[].digest"', 'berth images prune']);
  clientCommand(
    images,
    'prune',
    'remove every cached image no job holds now (pulled again when a job asks for it)',
  ).action(async (f: CommonFlags) => {
    const s = openSession(f);
    const removed = await s.client.post<CachedImageView[]>('/images/prune');
    s.show(removed, () => {
      if (removed.length === 0)
        return 'nothing to remove: every cached image is held by a job, or none is cached';
      const freed = removed.reduce((n, i) => n + i.bytes, 0);
      return `${imageTable(removed, Date.now())}\nremoved ${removed.length} image${removed.length === 1 ? '' : 's'}, ${formatBytes(freed)}`;
    });
  });
}
