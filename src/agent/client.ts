/** The agent's HTTP client: one job token, retries across short server outages. */
import { setTimeout as delay } from 'node:timers/promises';
import { httpPost, type PostAnswer } from './http-post.js';
import { AGENT_RETRY_MAX_DELAY_MS, JOB_SELF } from './protocol.js';

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

  async post<T>(path: string, body?: unknown, contentType = 'application/json'): Promise<T | undefined> {
    const deadline = Date.now() + this.retryForMs;
    for (let attempt = 0; ; attempt++) {
      let res: PostAnswer;
      try {
        res = await httpPost(
          this.base + path,
          {
            authorization: `Bearer ${this.opts.token}`,
            ...(body === undefined ? {} : { 'content-type': contentType }),
          },
          body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
        );
      } catch (e) {
        // Connection refused or reset: the server may be restarting. Back off and try again.
        if (Date.now() > deadline) throw e;
        await delay(Math.min(AGENT_RETRY_MAX_DELAY_MS, 50 * 2 ** attempt));
        continue;
      }
      const text = res.text;
      if (res.status >= 500 && Date.now() < deadline) {
        await delay(Math.min(AGENT_RETRY_MAX_DELAY_MS, 50 * 2 ** attempt));
        continue;
      }
      if (res.status >= 300) {
        let message = text;
        try {
          message = (JSON.parse(text) as { error: { message: string } }).error.message;
        } catch {
          // not JSON: keep the text
        }
        throw new AgentHttpError(res.status, `${path}: ${res.status} ${message}`);
      }
      return text ? (JSON.parse(text) as T) : undefined;
    }
  }
}
