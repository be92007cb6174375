/**
 * The agent's one kind of call: a POST, over node:http(s) with kept-alive connections. Every Slurm
 * worker starts an agent process; node:http costs it less to load than fetch (undici), about
 * 0.03 s of CPU per process on the test machine.
 */
import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { AGENT_RETRY_MAX_DELAY_MS } from './protocol.js';
import { isCertificateError, trustingAgent } from './trust.js';

export interface PostAnswer {
  status: number;
  text: string;
}

const httpAgent = new HttpAgent({ keepAlive: true });
let httpsAgent = new HttpsAgent({ keepAlive: true });

/**
 * Trusts the certificates of a CA file (trust.ts) besides the built-in CAs, for every later call
 * of this process: an agent process speaks to one server, so one setting, made at its start,
 * reaches every caller (the job runner, registration) without threading it through each.
 */
export function trustCa(pems: string[]): void {
  httpsAgent.destroy();
  httpsAgent = trustingAgent(pems);
}

/**
 * Starts a POST of `length` bytes to `url`; `answered` gets the whole answer. The caller writes
 * the body and listens for the request's errors.
 */
function startPost(
  url: string,
  headers: Record<string, string>,
  length: number,
  answered: (answer: PostAnswer, req: ClientRequest) => void,
  failed: (e: unknown) => void,
): ClientRequest {
  const target = new URL(url);
  const https = target.protocol === 'https:';
  const req: ClientRequest = (https ? httpsRequest : httpRequest)(
    target,
    {
      method: 'POST',
      agent: https ? httpsAgent : httpAgent,
      headers: { ...headers, 'content-length': String(length) },
    },
    (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        answered({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }, req),
      );
      res.on('error', failed);
    },
  );
  req.on('error', failed);
  return req;
}

/** POSTs `body` to `url`; rejects only when no answer came (refused, reset, unreachable). */
export function httpPost(
  url: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    const length = body === undefined ? 0 : Buffer.byteLength(body);
    startPost(url, headers, length, resolve, reject).end(body);
  });
}

/**
 * POSTs `length` bytes read from `body` as they come (an artifact: never held in memory whole).
 * Resolves with the answer, which may come before all was sent (a refusal: the rest is not sent);
 * rejects when no answer came, or `body` failed (then with its error).
 */
export function httpPostStream(
  url: string,
  headers: Record<string, string>,
  body: Readable,
  length: number,
): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    const answered = (answer: PostAnswer, req: ClientRequest) => {
      if (!req.writableFinished) {
        body.destroy();
        req.destroy();
      }
      resolve(answer);
    };
    const req = startPost(url, headers, length, answered, reject);
    body.on('error', (e) => {
      req.destroy();
      reject(e);
    });
    body.pipe(req);
  });
}

/** After a 429 (held by the server to its window's end), before the agent tries again. */
export const RATE_LIMITED_PAUSE_MS = 50;

/**
 * POSTs, trying again while the server cannot be reached or answers 5xx (a restart), backing off
 * to at most AGENT_RETRY_MAX_DELAY_MS, for up to `retryForMs`: the last answer, or the last error
 * when none came. A certificate the agent cannot verify fails at once, saying so: waiting would
 * not change it, and a misconfigured agent should not hold its worker for a minute.
 */
export async function postRetrying(
  url: string,
  headers: Record<string, string>,
  body: string | Buffer | undefined,
  retryForMs: number,
): Promise<PostAnswer> {
  const deadline = Date.now() + retryForMs;
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await httpPost(url, headers, body);
      if (res.status === 429) {
        // The job's own calls used its token's budget (rateLimit.jobRequestsPerSecond): the
        // server is there and held the answer to its window's end; wait, whatever the deadline.
        await delay(RATE_LIMITED_PAUSE_MS);
        continue;
      }
      if (res.status < 500 || Date.now() > deadline) return res;
    } catch (e) {
      if (isCertificateError(e))
        throw new Error(
          `cannot verify the server's TLS certificate: ${(e as Error).message} (give the CA that signed it with --ca FILE or BERTH_CA)`,
        );
      if (Date.now() > deadline) throw e;
    }
    await delay(Math.min(AGENT_RETRY_MAX_DELAY_MS, 50 * 2 ** attempt));
  }
}

/** The server's message in an error answer (`{"error": {"message": …}}`), else its text. */
export function errorMessage(text: string): string {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string') return message;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 200);
}
