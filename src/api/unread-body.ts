/**
 * The rest of a request refused before its body was read (a bad token on an upload, an artifact
 * over its limit): read and thrown away once the answer is sent, as nginx's lingering close does.
 *
 * Left unread, the socket is paused with nobody to read it again: a stopping server waits for
 * that request for good. Closed at once, with bytes still arriving, the kernel resets the
 * connection, and a client that reads its answer only once it has sent its body (or whose reset
 * arrives first) sees "connection reset", never the 413 or 401 that said why. Drained, the client
 * gets its answer and the connection stays usable; one that goes on sending past the bounds, or
 * stalls, has its request destroyed, which ends its connection.
 */
import type { Readable } from 'node:stream';

/** How long the rest of a refused body is read before the connection is ended. */
export const UNREAD_BODY_MS = 10_000;
/** How much of a refused body is read before the connection is ended. */
export const UNREAD_BODY_BYTES = 256 * 1024 * 1024;

/**
 * A request's body as it arrives: Node's IncomingMessage, or the stand-in of a request made in
 * process (Fastify's inject, which has no socket to end).
 */
export type RequestBody = Readable & { readonly complete: boolean };

/** Reads and discards what is left of `req`'s body, within the bounds. */
export function discardUnreadBody(
  req: RequestBody,
  bounds = { ms: UNREAD_BODY_MS, bytes: UNREAD_BODY_BYTES },
): void {
  if (req.complete || req.destroyed) return;
  let bytes = 0;
  const end = () => {
    clearTimeout(timer);
    req.destroy();
  };
  const timer = setTimeout(end, bounds.ms).unref();
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > bounds.bytes) end();
  });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}
