/**
 * The API's own figures: requests by route template (`/api/v1/jobs/:id`, never the path itself,
 * which would name every job), method and status code, and their latency per route — what an SLO
 * on the API is written over, and what `berth diag` would show as the busiest routes.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { RequestTally } from './diag.js';

/** A request that matched no route (a 404 for an unknown path) is counted under this route. */
export const UNMATCHED = 'unmatched';

export class HttpMetrics {
  private readonly requests: Counter<'route' | 'method' | 'code'>;
  private readonly latency: Histogram<'route'>;
  /** The same per route, and per caller (not a Prometheus label: it grows with the users), for berth diag. */
  readonly tally = new RequestTally();

  constructor(registers: Registry[]) {
    this.requests = new Counter({
      name: 'berth_http_requests_total',
      help: 'API requests answered, by route template, method and status code',
      labelNames: ['route', 'method', 'code'],
      registers,
    });
    this.latency = new Histogram({
      name: 'berth_http_request_duration_seconds',
      help: 'Time from a request arriving to its answer sent, by route template (a long poll counts its wait)',
      labelNames: ['route'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30, 60],
      registers,
    });
  }

  /**
   * One request answered: its route template (undefined: none matched), method, status, time,
   * and who asked (diag.ts's CallerView).
   */
  answered(route: string | undefined, method: string, code: number, seconds: number, caller: string): void {
    const r = route ?? UNMATCHED;
    this.requests.inc({ route: r, method, code: String(code) });
    this.latency.observe({ route: r }, seconds);
    this.tally.add(r, caller, seconds);
  }
}
