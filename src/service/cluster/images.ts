/**
 * The OCI images on the machine that runs the jobs (`berth images`, docs/IMAGES.md): what is
 * cached, how big, when last used, which jobs hold each; and their prune. Admins only: an
 * image's reference names another project's software.
 */
import type { CachedImageView } from '../../domain/image.js';
import type { Principal } from '../../domain/user.js';
import { write } from '../jobs/jobs.js';
import { requireAdmin } from '../tenancy/access.js';
import { audit } from '../tenancy/audit.js';
import type { With } from '../context.js';

export function listImages(ctx: With<'runtime'>, p: Principal): CachedImageView[] {
  requireAdmin(p, 'list the cached images');
  return ctx.runtime.controller.images();
}

/** Removes every image no job holds; the audit log says which, and how much it freed. */
export async function pruneImages(ctx: With<'runtime'>, p: Principal): Promise<CachedImageView[]> {
  requireAdmin(p, 'prune the cached images');
  const removed = await ctx.runtime.controller.pruneImages();
  if (removed.length > 0)
    await write(ctx, (db) =>
      audit(
        db,
        p,
        {
          action: 'image.prune',
          subject: `${removed.length} image${removed.length === 1 ? '' : 's'}`,
          detail: {
            images: removed.map((i) => i.reference ?? i.digest),
            bytes: removed.reduce((n, i) => n + i.bytes, 0),
          },
        },
        ctx.now(),
      ),
    );
  return removed;
}
