/**
 * The CLI's HTTP calls, over node:http(s) rather than fetch: Node 20's fetch (undici) takes no CA
 * of its own — only NODE_EXTRA_CA_CERTS, read once at process start — and `--ca` needs one per
 * server. Answers come back as fetch's Response, so the client reads them as it always has.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type Agent as HttpsAgent } from 'node:https';
import { Readable } from 'node:stream';

export interface TransportRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/**
 * One request; resolves with the answer once its headers have come, its body still streaming.
 * `agent` carries the trust of HTTPS connections (agent/trust.ts); Node's own otherwise.
 */
export function send(url: string, init: TransportRequest, agent?: HttpsAgent): Promise<Response> {
  const target = new URL(url);
  const https = target.protocol === 'https:';
  const length = init.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(init.body)) };
  return new Promise((resolve, reject) => {
    let answer: IncomingMessage | undefined;
    const req = (https ? httpsRequest : httpRequest)(
      target,
      { method: init.method, headers: { ...init.headers, ...length }, ...(https && agent ? { agent } : {}) },
      (res) => {
        answer = res;
        res.once('close', release);
        resolve(toResponse(res, init.method));
      },
    );
    // Aborted (a timeout): its reason fails the call, or the body being read, as with fetch.
    const release = onAbort(init.signal, (reason) => {
      req.destroy(reason);
      answer?.destroy(reason);
    });
    req.on('error', (err) => {
      release();
      reject(err);
    });
    req.end(init.body);
  });
}

/** Calls `stop` with the signal's reason when it aborts (at once if it has); returns the undo. */
function onAbort(signal: AbortSignal | undefined, stop: (reason: Error) => void): () => void {
  if (!signal) return () => {};
  const listener = () => stop(signal.reason as Error);
  if (signal.aborted) {
    listener();
    return () => {};
  }
  signal.addEventListener('abort', listener, { once: true });
  return () => signal.removeEventListener('abort', listener);
}

function toResponse(res: IncomingMessage, method: string): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const status = res.statusCode ?? 0;
  // A Response may not have a body for these (the constructor refuses one).
  const bodiless = method === 'HEAD' || status === 204 || status === 304;
  // Nothing reads a bodiless answer: drained, and a reset after it is no one's error.
  if (bodiless) res.on('error', () => {}).resume();
  const body = bodiless ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
  return new Response(body, { status, statusText: res.statusMessage ?? '', headers });
}
