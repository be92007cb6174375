/**
 * A browser's token on a WebSocket upgrade: a browser's `WebSocket` cannot send an Authorization
 * header, so the dashboard offers the token as a subprotocol, as Kubernetes does
 * (`base64url.bearer.authorization.k8s.io.TOKEN`):
 *
 *   Sec-WebSocket-Protocol: berth.exec.v1, base64url.bearer.authorization.berth.<base64url(token)>
 *
 * The server selects `berth.exec.v1` (`chooseProtocol`), so the token is never echoed back. Pure.
 */

/** The protocol a browser offers beside its token, and the one the server answers with. */
export const EXEC_SUBPROTOCOL = 'berth.exec.v1';

/** What comes before the token, base64url-encoded without padding, in its subprotocol. */
export const TOKEN_SUBPROTOCOL_PREFIX = 'base64url.bearer.authorization.berth.';

export type SocketToken =
  | { kind: 'none' }
  | { kind: 'token'; token: string }
  /** Why it cannot be read; never the token itself, nor any part of it. */
  | { kind: 'malformed'; why: string };

/** A token's characters: visible ASCII, as a bearer token's (RFC 6750, b64token, and more). */
const VISIBLE = /^[\x21-\x7e]+$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The offered subprotocols of a `Sec-WebSocket-Protocol` header (one or several), in order. */
export function offeredProtocols(header: string | string[] | undefined): string[] {
  const values = header === undefined ? [] : Array.isArray(header) ? header : [header];
  return values
    .flatMap((v) => v.split(','))
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/** The token a `Sec-WebSocket-Protocol` header carries, if any. */
export function socketToken(header: string | string[] | undefined): SocketToken {
  const offered = offeredProtocols(header);
  const tokens = offered.filter((p) => p.startsWith(TOKEN_SUBPROTOCOL_PREFIX));
  if (tokens.length === 0) return { kind: 'none' };
  if (tokens.length > 1) return malformed('more than one token subprotocol');
  if (!offered.includes(EXEC_SUBPROTOCOL))
    return malformed(`a token subprotocol goes with "${EXEC_SUBPROTOCOL}", which was not offered`);
  const encoded = tokens[0]!.slice(TOKEN_SUBPROTOCOL_PREFIX.length);
  // Base64url without padding: a length of 4n+1 cannot be, and a re-encoding must give it back
  // (no stray bits), so that one token has one spelling.
  if (!BASE64URL.test(encoded) || encoded.length % 4 === 1) return malformed('the token is not base64url');
  const bytes = Buffer.from(encoded, 'base64url');
  if (bytes.toString('base64url') !== encoded) return malformed('the token is not base64url');
  const token = bytes.toString('latin1');
  if (!VISIBLE.test(token)) return malformed('the token holds characters no token has');
  return { kind: 'token', token };
}

/**
 * The subprotocol the server selects among those offered (ws's `handleProtocols`): berth's own
 * when offered, else none — never the token's.
 */
export function chooseProtocol(offered: Iterable<string>): string | false {
  for (const p of offered) if (p === EXEC_SUBPROTOCOL) return p;
  return false;
}

const malformed = (why: string): SocketToken => ({
  kind: 'malformed',
  why: `Sec-WebSocket-Protocol: ${why} (offer "${EXEC_SUBPROTOCOL}" and "${TOKEN_SUBPROTOCOL_PREFIX}" followed by the token in base64url, without padding)`,
});
