/** `berth targets`: where jobs can run — each target's factory and its figures, pilots, default timeout. */
import type { Command } from 'commander';
import type { TargetView } from '../../domain/pool-figures.js';
import { formatSpan } from '../../domain/duration.js';
import { quantities, table } from '../output.js';
import { clientCommand, openSession, type CommonFlags } from '../session.js';

export function registerTargetCommand(program: Command): void {
  clientCommand(
    program,
    'targets',
    'list targets (berth submit --target): factory, workers in use and jobs waiting, pilots, default timeout',
  ).action(async (f: CommonFlags) => {
    const s = openSession(f);
    const targets = await s.client.get<TargetView[]>('/targets');
    s.show(targets, () => {
      if (targets.length === 0) return 'no targets are configured (see targets: in berth.yaml)';
      const rows = targets.map((t) => [
        t.name,
        t.factory,
        t.capacity,
        t.inUse,
        t.waiting,
        t.reuse ? 'yes' : '-',
        t.defaultTimeoutSeconds === null ? '-' : formatSpan(t.defaultTimeoutSeconds * 1000, 2),
        t.privilege ?? '-',
      ]);
      const chosen = targets.find((t) => t.default);
      // Who jobs run as is the factory's: one line per factory, under the table.
      const isolation = new Map(targets.flatMap((t) => (t.isolation ? [[t.factory, t.isolation]] : [])));
      const devices = new Map(targets.flatMap((t) => (t.devices ? [[t.factory, t.devices]] : [])));
      // A job's requests as a target bounds them: one line per target that sets any.
      const bounds = targets.flatMap((t) => {
        const parts = [
          ...(Object.keys(t.defaultRequests).length > 0
            ? [`default requests ${quantities(t.defaultRequests)}`]
            : []),
          ...(Object.keys(t.maxRequests).length > 0
            ? [`at most ${quantities(t.maxRequests)} per worker`]
            : []),
          ...(t.image !== null ? [`image ${t.image} unless a job names one`] : []),
          ...(t.registries !== null ? [`images from ${t.registries.join(', ') || 'no registry'} only`] : []),
        ];
        return parts.length > 0 ? [`target ${t.name}: ${parts.join('; ')}`] : [];
      });
      return [
        table(
          ['NAME', 'FACTORY', 'CAPACITY', 'IN USE', 'WAITING', 'PILOTS', 'DEFAULT TIMEOUT', 'PRIVILEGE'],
          rows,
        ),
        ...(chosen ? [`jobs submitted without --target run on ${chosen.name}`] : []),
        ...[...isolation].map(([factory, how]) => `factory ${factory}: ${how}`),
        ...[...devices].map(([factory, what]) => `factory ${factory}: devices ${what}`),
        ...bounds,
      ].join('\n');
    });
  });
}
