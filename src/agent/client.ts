/** The agent's HTTP client: one job token, retries across short server outages. */
import { errorMessage, postRetrying } from './http-post.js';
import { JOB_SELF } from './protocol.js';

export class AgentHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface AgentClientOptions {
  url: string;
  token: string;
  /** How long to keep retrying when the server cannot be reached (server restarts). */
  retryForMs?: number;
}

export class AgentClient {
  private readonly base: string;
  private readonly retryForMs: number;

  constructor(private readonly opts: AgentClientOptions) {
    this.base = opts.url.replace(/\/$/, '') + JOB_SELF;
    this.retryForMs = opts.retryForMs ?? 60_000;
  }

  async post<T>(
    path: string,
    body?: unknown,
    contentType = 'application/json',
    headers: Record<string, string> = {},
  ): Promise<T | undefined> {
    const res = await postRetrying(
      this.base + path,
      {
        ...headers,
        authorization: `Bearer ${this.opts.token}`,
        ...(body === undefined ? {} : { 'content-type': contentType }),
      },
      body === undefined || typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
      this.retryForMs,
    );
    if (res.status >= 300)
      throw new AgentHttpError(res.status, `${path}: ${res.status} ${errorMessage(res.text)}`);
    return res.text ? (JSON.parse(res.text) as T) : undefined;
  }
}
