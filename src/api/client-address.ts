/**
 * The client's address through a follower. A request a follower hands to the leader (forward.ts)
 * reaches the leader from the follower's address, but its audit row should name the client's. So
 * the follower tells it in a header, signed with a secret only the replicas know (a random key
 * in the shared `settings` table, replicas/replica-node.ts): `<address>;<ms>;<HMAC-SHA256 hex>`.
 *
 * The leader believes the header only when its MAC is right, so a client cannot set it to hide
 * where it is (a forged or copied-over header is ignored and the request's own address kept);
 * without replicas (SQLite) there is no secret and the header is always ignored. The MAC covers
 * the address, the time it was signed and the request it came with — its method, URL and a hash
 * of its authorization header — and is believed for a minute: a header seen on the wire between
 * replicas names that address only for that very request, by the token that made it, and not
 * for long.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

export const CLIENT_ADDRESS = 'x-berth-client-address';

/** How long a signature is believed: a forwarded request reaches the leader within its timeout. */
export const SIGNATURE_LIFETIME_MS = 60_000;

/** What a signature binds the address to: the request's method, URL and authorization. */
export interface SignedRequest {
  method: string;
  url: string;
  authorization?: string | undefined;
}

const mac = (secret: string, address: string, at: number, r: SignedRequest): Buffer =>
  createHmac('sha256', secret)
    .update(
      [
        address,
        String(at),
        `${r.method} ${r.url}`,
        createHash('sha256')
          .update(r.authorization ?? '')
          .digest('hex'),
      ].join('\n'),
    )
    .digest();

/** The header's value that says `address` is the client's of request `r`, signed with `secret` at `now`. */
export function signAddress(secret: string, address: string, r: SignedRequest, now = Date.now()): string {
  return `${address};${now};${mac(secret, address, now, r).toString('hex')}`;
}

/**
 * The address `value` carries if it was signed with `secret` for request `r` less than
 * SIGNATURE_LIFETIME_MS before `now` (or a little after: clocks differ); otherwise undefined.
 */
export function verifyAddress(
  secret: string,
  value: string,
  r: SignedRequest,
  now = Date.now(),
): string | undefined {
  const m = /^(.+);(\d{1,15});([0-9a-f]{64})$/.exec(value);
  if (!m) return undefined;
  const [, address = '', atText = '', hex = ''] = m;
  const at = Number(atText);
  if (Math.abs(now - at) > SIGNATURE_LIFETIME_MS) return undefined;
  const given = Buffer.from(hex, 'hex');
  const expected = mac(secret, address, at, r);
  return given.length === expected.length && timingSafeEqual(given, expected) ? address : undefined;
}

/** The parts of `req` its signature binds. */
export const signedRequest = (req: FastifyRequest): SignedRequest => ({
  method: req.method,
  url: req.url,
  authorization: req.headers.authorization,
});

/**
 * Where `req` came from: the address a replica signed for it with `secret` (the replicas'
 * shared one; absent without replicas), else the request's own remote address.
 */
export function clientAddress(req: FastifyRequest, secret: string | undefined): string {
  const value = req.headers[CLIENT_ADDRESS];
  const signed =
    secret !== undefined && typeof value === 'string'
      ? verifyAddress(secret, value, signedRequest(req))
      : undefined;
  return signed ?? req.ip;
}
