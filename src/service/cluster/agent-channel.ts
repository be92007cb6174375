/**
 * The credential of a remote agent's channel to the server (agent/channel-protocol.ts): handed to
 * the agent in its registration's answer — which only the worker's one-time credential obtains —
 * and shown when it dials the channel. It is an HMAC of the worker's id under a key the
 * installation keeps in its `settings` (made at first need, the same for every replica), so that
 * any replica can check it, it outlives a restart (the agent dials again), and nothing per worker
 * is stored. It names the worker alone, and a channel is taken only for a live worker of a factory
 * whose agents dial one (the controller checks): once the worker is gone it opens nothing. The
 * job's token, which the job's code holds too, is never enough.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { UnauthorizedError } from '../../domain/errors.js';
import { initSetting } from '../../store/queries/settings.js';
import type { Store } from '../../store/store.js';
import type { ChannelSocket } from '../../controller/port.js';

export type { ChannelSocket };
import type { ServiceContext, With } from '../context.js';

const KEY_SETTING = 'agent-channel-key';
const keys = new WeakMap<Store, Promise<Buffer>>();

function keyOf(store: Store): Promise<Buffer> {
  let key = keys.get(store);
  if (!key) {
    key = initSetting(store.db, KEY_SETTING, randomBytes(32).toString('base64')).then((v) =>
      Buffer.from(v, 'base64'),
    );
    // A failed read is not kept: the next registration asks again.
    key.catch(() => keys.delete(store));
    keys.set(store, key);
  }
  return key;
}

/** The channel credential of worker `workerId`. */
export async function channelCredential(ctx: ServiceContext, workerId: number): Promise<string> {
  const mac = createHmac('sha256', await keyOf(ctx.store))
    .update(`agent-channel:${workerId}`)
    .digest();
  return `chan_${mac.toString('base64url')}`;
}

/**
 * Checks `credential` for worker `workerId`'s channel and that its factory would take it (a 401
 * or a 409 otherwise, before the upgrade); resolves with what hands the socket over.
 */
export async function openChannel(
  ctx: With<'runtime'>,
  workerId: number,
  rank: number,
  credential: string,
): Promise<(socket: ChannelSocket) => void> {
  const expected = Buffer.from(await channelCredential(ctx, workerId));
  const given = Buffer.from(credential);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw new UnauthorizedError(`not the channel credential of worker ${workerId}`);
  const { controller } = ctx.runtime;
  controller.agentChannel(workerId, rank);
  return (socket) => controller.agentChannel(workerId, rank, socket);
}
