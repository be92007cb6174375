/**
 * The client's address through a follower. A request a follower hands to the leader (forward.ts)
 * reaches the leader from the follower's address, but its audit row should name the client's. So
 * the follower tells it in a header, signed with a secret only the replicas know (a random key
 * in the shared `settings` table, replicas/replica-node.ts): `<address>;<HMAC-SHA256 hex>`.
 *
 * The leader believes the header only when its MAC is right, so a client cannot set it to hide
 * where it is (a forged or copied-over header is ignored and the request's own address kept);
 * without replicas (SQLite) there is no secret and the header is always ignored. The MAC covers
 * the address alone: a header seen on the wire between replicas could be replayed to claim that
 * one address, so their traffic is as private as its transport (HTTPS with `tls`).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

export const CLIENT_ADDRESS = 'x-berth-client-address';

const mac = (secret: string, address: string): Buffer =>
  createHmac('sha256', secret).update(address).digest();

/** The header's value that says `address` is the client's, signed with `secret`. */
export function signAddress(secret: string, address: string): string {
  return `${address};${mac(secret, address).toString('hex')}`;
}

/** The address `value` carries if it was signed with `secret`; otherwise undefined. */
export function verifyAddress(secret: string, value: string): string | undefined {
  const at = value.lastIndexOf(';');
  if (at <= 0) return undefined;
  const address = value.slice(0, at);
  const given = Buffer.from(value.slice(at + 1), 'hex');
  const expected = mac(secret, address);
  return given.length === expected.length && timingSafeEqual(given, expected) ? address : undefined;
}

/**
 * Where `req` came from: the address a replica signed for it with `secret` (the replicas'
 * shared one; absent without replicas), else the request's own remote address.
 */
export function clientAddress(req: FastifyRequest, secret: string | undefined): string {
  const value = req.headers[CLIENT_ADDRESS];
  const signed = secret !== undefined && typeof value === 'string' ? verifyAddress(secret, value) : undefined;
  return signed ?? req.ip;
}
