/**
 * `berth diag` (`GET /diag`): Slurm's sdiag for berth — what an admin at a terminal without
 * Prometheus asks first: how the scheduler's and the controller's cycles go since the server
 * started (count, last, mean, max), which routes and which callers keep the API busiest, and what
 * the controller has waiting. Kept in memory, bounded: a route template or a caller (a user, a
 * project token's project, jobs as one) per entry, never a job or a path.
 */
import type { CallerView, CycleView, RouteView } from '../domain/diag.js';

/** A cycle's figures since start, as sdiag gives its main and backfill cycles. */
export class CycleStats {
  private count = 0;
  private total = 0;
  private last = 0;
  private max = 0;

  observe(seconds: number): void {
    this.count++;
    this.total += seconds;
    this.last = seconds;
    if (seconds > this.max) this.max = seconds;
  }

  view(): CycleView {
    return {
      count: this.count,
      lastSeconds: this.last,
      meanSeconds: this.count === 0 ? 0 : this.total / this.count,
      maxSeconds: this.max,
    };
  }
}

/** How many routes and callers a view lists, busiest first. */
export const BUSIEST = 10;

/** Requests per route template and per caller since start. */
export class RequestTally {
  private readonly routes = new Map<string, { requests: number; total: number; max: number }>();
  private readonly callers = new Map<string, number>();

  add(route: string, caller: string, seconds: number): void {
    const r = this.routes.get(route);
    if (r) {
      r.requests++;
      r.total += seconds;
      if (seconds > r.max) r.max = seconds;
    } else this.routes.set(route, { requests: 1, total: seconds, max: seconds });
    this.callers.set(caller, (this.callers.get(caller) ?? 0) + 1);
  }

  busiestRoutes(n = BUSIEST): RouteView[] {
    return [...this.routes]
      .map(([route, r]) => ({
        route,
        requests: r.requests,
        meanSeconds: r.total / r.requests,
        maxSeconds: r.max,
      }))
      .sort((a, b) => b.requests - a.requests || a.route.localeCompare(b.route))
      .slice(0, n);
  }

  busiestCallers(n = BUSIEST): CallerView[] {
    return [...this.callers]
      .map(([caller, requests]) => ({ caller, requests }))
      .sort((a, b) => b.requests - a.requests || a.caller.localeCompare(b.caller))
      .slice(0, n);
  }
}
