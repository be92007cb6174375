/** `berth diag`: the server's figures since it started, as Slurm's `sdiag` gives Slurm's (admins). */
import type { Command } from 'commander';
import type { CycleView, DiagView } from '../../domain/diag.js';
import { formatSpan } from '../duration.js';
import { fields, table, timeText } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

/** A short time: `0.42 ms`, `12.3 ms`, `1.25 s`. */
export function shortTime(seconds: number): string {
  if (seconds < 0.01) return `${(seconds * 1000).toFixed(2)} ms`;
  if (seconds < 1) return `${(seconds * 1000).toFixed(1)} ms`;
  return `${seconds.toFixed(2)} s`;
}

const cycle = (c: CycleView): string =>
  c.count === 0
    ? 'none yet'
    : `${c.count.toLocaleString('en')}; last ${shortTime(c.lastSeconds)}, mean ${shortTime(c.meanSeconds)}, max ${shortTime(c.maxSeconds)}`;

/** The view as a person reads it. */
export function diagText(d: DiagView, now = Date.now()): string {
  const sections = [
    fields([
      ['server', `up ${formatSpan(d.uptimeSeconds * 1000)}, since ${timeText(d.startedAt, now)}`],
      [
        'role',
        d.leading ? `leads (term ${d.term})` : `follows (term ${d.term}): the leader's figures are its own`,
      ],
      ['scheduler passes', cycle(d.scheduler)],
      ['controller ticks', cycle(d.ticks)],
    ]),
    d.queues.length === 0
      ? 'no cluster queues'
      : table(
          ['QUEUE', 'PENDING', 'ADMITTED'],
          d.queues.map((q) => [q.name, q.pending, q.admitted]),
        ),
    d.factories.length === 0
      ? 'no factories run here (a follower)'
      : table(
          ['FACTORY', 'WORKERS', 'JOBS WAITING FOR ONE'],
          d.factories.map((f) => [f.name, f.inUse, f.waiting]),
        ),
    'busiest routes since the start:\n' +
      table(
        ['ROUTE', 'REQUESTS', 'MEAN', 'MAX'],
        d.routes.map((r) => [r.route, r.requests, shortTime(r.meanSeconds), shortTime(r.maxSeconds)]),
      ),
    'busiest callers since the start:\n' +
      table(
        ['CALLER', 'REQUESTS'],
        d.callers.map((c) => [c.caller, c.requests]),
      ),
  ];
  return sections.join('\n\n');
}

export function registerDiagCommand(program: Command): void {
  const diag = clientCommand(
    program,
    'diag',
    "the server's figures since it started, as Slurm's sdiag: scheduler passes and controller ticks (count, last, mean, max), what waits per queue and factory, the busiest routes and callers (admins; Prometheus has the same over time: docs/OPERATIONS.md)",
  ).action(async (f: CommonFlags) => {
    const s = openSession(f);
    const d = await s.client.get<DiagView>('/diag');
    s.show(d, () => diagText(d));
  });
  examples(diag, ['berth diag', 'berth diag -o json | jq .scheduler']);
}
