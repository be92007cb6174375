/**
 * First start: an admin user whose token goes to DATA/admin.token (mode 0600), cluster queue
 * `default` sized to this machine, and project `default` bound to it. Idempotent: it only acts
 * when the store has no users yet.
 */
import { writeFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import type { ServiceContext } from '../service/context.js';
import { createClusterQueueUnchecked } from '../service/cluster/cluster-queues.js';
import { createProjectUnchecked } from '../service/tenancy/projects.js';
import { createUserUnchecked } from '../service/tenancy/users.js';
import { countUsers } from '../store/queries/users.js';

export const ADMIN_TOKEN_FILE = 'admin.token';

export interface BootstrapResult {
  adminToken: string;
  tokenFile: string;
}

export async function bootstrap(ctx: ServiceContext, dataDir: string): Promise<BootstrapResult | undefined> {
  if ((await countUsers(ctx.store.db)) > 0) return undefined;
  try {
    return await firstStart(ctx, dataDir);
  } catch (e) {
    // Another replica on the same PostgreSQL did the first start at the same time: fine.
    if ((await countUsers(ctx.store.db)) > 0) return undefined;
    throw e;
  }
}

async function firstStart(ctx: ServiceContext, dataDir: string): Promise<BootstrapResult> {
  const admin = await createUserUnchecked(ctx, { name: 'admin', admin: true });
  const tokenFile = join(dataDir, ADMIN_TOKEN_FILE);
  writeFileSync(tokenFile, admin.token + '\n', { mode: 0o600 });
  const memoryGi = Math.max(1, Math.floor(totalmem() / 2 ** 30));
  await createClusterQueueUnchecked(ctx, {
    name: 'default',
    quota: { cpu: String(availableParallelism()), memory: `${memoryGi}Gi` },
  });
  await createProjectUnchecked(ctx, {
    name: 'default',
    description: 'created on first start',
    clusterQueue: 'default',
  });
  return { adminToken: admin.token, tokenFile };
}
