/**
 * The rest of a request refused before its body was read (a bad token on an upload, an artifact
 * over its limit): read and thrown away once the answer is sent, as nginx's lingering close does.
 *
 * Left unread, the socket is paused with nobody to read it again: a stopping server waits for
 * that request for good. Closed at once, with bytes still arriving, the kernel resets the
 * connection, and a client that reads its answer only once it has sent its body (or whose reset
 * arrives first) sees "connection reset", never the 413 or 401 that said why. Drained, the client
 * gets its answer and the connection stays usable; one that goes on sending past the bounds, or
 * stalls, has its connection ended.
 */
import type { IncomingMessage } from 'node:http';

/** How long the rest of a refused body is read before the connection is ended. */
export const UNREAD_BODY_MS = 10_000;
/** How much of a refused body is read before the connection is ended. */
export const UNREAD_BODY_BYTES = 256 * 1024 * 1024;

/** Reads and discards what is left of `req`'s body, within the bounds above. */
export function discardUnreadBody(req: IncomingMessage): void {
  if (req.complete || req.destroyed) return;
  let bytes = 0;
  const end = () => {
    clearTimeout(timer);
    req.socket.destroy();
  };
  const timer = setTimeout(end, UNREAD_BODY_MS).unref();
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > UNREAD_BODY_BYTES) end();
  });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}
