/**
 * A typed client for the berth HTTP API. Every failure becomes an ApiError (the server answered
 * with an error) or a ConnectionError (it could not be asked), both with one-line messages.
 */
import type { Agent as HttpsAgent } from 'node:https';
import { trustingAgent } from '../agent/trust.js';
import { VERSION } from '../version.js';
import { CliError } from './errors.js';
import { send } from './transport.js';

export const API_PREFIX = '/api/v1';
const DEFAULT_TIMEOUT_MS = 30_000;

/** The server answered with an error: `{"error": {"code", "message"}}` and a 4xx/5xx status. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The server could not be reached, or what answered is not a berth server. */
export class ConnectionError extends CliError {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectionError';
  }
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Per-request time limit; 0 disables it (for streams such as `logs -f`). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Extra request headers. */
  headers?: Record<string, string>;
  /** What the body must be: JSON (the default; anything else means "not a berth server") or text. */
  expect?: 'json' | 'text';
}

export interface ClientOptions {
  /** Appended to connection errors, e.g. "is the server in /x/.berth running?". */
  hint?: string;
  /** Appended to 401 messages: where the token came from. */
  tokenSource?: string;
  /** HTTPS: certificates trusted besides Node's built-in CAs (agent/trust.ts), and where from. */
  ca?: { certificates: string[]; source: string };
}

/** Builds an API path with each interpolated value URL-encoded: apiPath`/projects/${name}`. */
export function apiPath(strings: TemplateStringsArray, ...values: (string | number)[]): string {
  return strings.reduce(
    (out, s, i) => out + s + (i < values.length ? encodeURIComponent(values[i]!) : ''),
    '',
  );
}

/** Low-level network failures, in words. */
const NETWORK_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found (DNS lookup failed)',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed by the server',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed TLS certificate',
  CERT_HAS_EXPIRED: 'TLS certificate has expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS certificate does not match the host name',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS certificate not signed by a trusted CA',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'TLS certificate not signed by a trusted CA',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS certificate signed by an untrusted CA',
  ERR_SSL_WRONG_VERSION_NUMBER: 'the server does not speak HTTPS (is it http://?)',
};

/** Codes of a certificate the client could not verify: the answer names what it trusted. */
const UNVERIFIED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
]);

const errorCode = (err: unknown): unknown => (err as { code?: unknown } | undefined)?.code;

function networkReason(err: unknown): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
    return err.name === 'TimeoutError' ? 'request timed out' : 'request aborted';
  }
  // fetch wraps the socket error in `cause` (sometimes twice, as an AggregateError's errors).
  let cause: unknown = err instanceof Error && err.cause !== undefined ? err.cause : err;
  if (cause instanceof AggregateError && cause.errors.length > 0) cause = cause.errors[0];
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && NETWORK_ERRORS[code]) return NETWORK_ERRORS[code];
  const message = cause instanceof Error ? cause.message : String(cause);
  // OpenSSL's words for an https:// URL whose server answered in plain HTTP.
  if (/wrong version number/.test(message)) return NETWORK_ERRORS.ERR_SSL_WRONG_VERSION_NUMBER!;
  return message;
}

interface ErrorBody {
  error?: { code?: unknown; message?: unknown };
}

export class ApiClient {
  readonly baseUrl: string;
  /** HTTPS connections trusting `options.ca` too; Node's default agent without one. */
  private readonly httpsAgent: HttpsAgent | undefined;

  constructor(
    baseUrl: string,
    private readonly token: string | undefined,
    private readonly options: ClientOptions = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.httpsAgent = options.ca ? trustingAgent(options.ca.certificates) : undefined;
  }

  get<T>(path: string, opts: Omit<RequestOptions, 'body'> = {}): Promise<T> {
    return this.request<T>('GET', path, opts);
  }

  post<T>(path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('POST', path, { ...opts, body });
  }

  patch<T>(path: string, body: unknown, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('PATCH', path, { ...opts, body });
  }

  put<T>(path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('PUT', path, { ...opts, body });
  }

  delete<T = undefined>(path: string, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('DELETE', path, opts);
  }

  /** A text body, e.g. `GET /jobs/{id}/logs`. */
  getText(path: string, opts: Omit<RequestOptions, 'body' | 'expect'> = {}): Promise<string> {
    return this.request<string>('GET', path, { ...opts, expect: 'text' });
  }

  /** One call; resolves with the parsed JSON body (or the text), undefined for 204. */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.send(method, path, opts);
    const text = await this.read(res);
    if (opts.expect === 'text') return text as T;
    if (res.status === 204 || text === '') return undefined as T;
    if (!isJson(res)) throw this.notBerth(res);
    return this.parse(res, text) as T;
  }

  /**
   * The raw response of a successful call, body unread: for streaming endpoints
   * (`GET /jobs/{id}/logs?follow=true`). Errors are thrown as for `request`.
   */
  async stream(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    return this.send(method, path, { timeoutMs: 0, ...opts });
  }

  /**
   * The body of a streaming endpoint chunk by chunk, as it arrives (`GET /jobs/{id}/logs?follow=true`).
   * Leaving the loop early closes the connection; a connection lost midway is a ConnectionError.
   */
  async *chunks(path: string, opts: Omit<RequestOptions, 'body'> = {}): AsyncGenerator<Uint8Array> {
    const res = await this.stream('GET', path, { expect: 'text', ...opts });
    if (!res.body) return;
    const reader = res.body.getReader();
    try {
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (err) {
          throw this.unreachable(err, 'lost the connection to');
        }
        if (next.done) return;
        yield next.value;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  private url(path: string, query: Query = {}): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return `${this.baseUrl}${API_PREFIX}${path}${qs ? `?${qs}` : ''}`;
  }

  private async send(method: string, path: string, opts: RequestOptions): Promise<Response> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const signals = [opts.signal, timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined].filter(
      (s): s is AbortSignal => s !== undefined,
    );
    const headers: Record<string, string> = {
      'user-agent': `berth-cli/${VERSION}`,
      accept: opts.expect === 'text' ? 'text/plain, application/json' : 'application/json',
      ...opts.headers,
    };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await send(
        this.url(path, opts.query),
        {
          method,
          headers,
          ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
          ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}),
        },
        this.httpsAgent,
      );
    } catch (err) {
      throw this.unreachable(err);
    }
    if (!res.ok) throw await this.failure(res);
    return res;
  }

  private async read(res: Response): Promise<string> {
    try {
      return await res.text();
    } catch (err) {
      throw this.unreachable(err);
    }
  }

  private unreachable(err: unknown, what = 'cannot reach'): ConnectionError {
    const hint = this.tlsHint(err) ?? this.options.hint;
    return new ConnectionError(
      `${what} berth at ${this.baseUrl}: ${networkReason(err)}${hint ? ` (${hint})` : ''}`,
    );
  }

  /**
   * For a certificate not verified: what was trusted, or how to trust its CA. For a reset on
   * http://: an HTTPS server drops plain HTTP without an answer.
   */
  private tlsHint(err: unknown): string | undefined {
    const code = errorCode(err);
    if (code === 'ECONNRESET' && this.baseUrl.startsWith('http:'))
      return 'if the server serves HTTPS, use https://';
    if (typeof code !== 'string' || !UNVERIFIED.has(code)) return undefined;
    const ca = this.options.ca;
    return ca
      ? `trusted: Node's built-in CAs and ${ca.source}`
      : "trusted: Node's built-in CAs; give its CA with BERTH_CA=FILE, or berth login --ca FILE";
  }

  private parse(res: Response, text: string): unknown {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw this.notBerth(res);
    }
  }

  private notBerth(res: Response): ConnectionError {
    const type = (res.headers.get('content-type') ?? 'no content type').split(';')[0];
    return new ConnectionError(
      `unexpected answer from ${this.baseUrl}: HTTP ${res.status} (${type}); is this a berth server?`,
    );
  }

  private async failure(res: Response): Promise<CliError> {
    const text = await this.read(res);
    let body: ErrorBody | undefined;
    try {
      body = JSON.parse(text) as ErrorBody;
    } catch {
      body = undefined;
    }
    const e = body?.error;
    if (!e || typeof e.message !== 'string') {
      if (res.status === 404) return this.notBerth(res);
      return new ApiError(
        res.status,
        'http_error',
        `HTTP ${res.status} ${res.statusText} from ${this.baseUrl}`,
      );
    }
    let message = e.message;
    if (res.status === 401 && this.options.tokenSource)
      message += ` (token from ${this.options.tokenSource})`;
    return new ApiError(res.status, typeof e.code === 'string' ? e.code : 'error', message);
  }
}

const isJson = (res: Response) => (res.headers.get('content-type') ?? '').includes('json');
