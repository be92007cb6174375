import type { ServiceContext } from '../../service/context.js';
import { forecastInput } from '../../service/live/forecast-input.js';
import type { Router } from './types.js';

export async function forecastRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  api.get(
    '/scheduler/forecast-input',
    {
      config: { leader: 'only' },
      schema: {
        tags: ['scheduler'],
        summary:
          'What start-time estimates forecast from, now: the queues, the jobs holding quota with their expected ends, the first pending jobs of every queue with their expected runtimes, and the arrivals projected from the recent past (berth simulate --from-server). Jobs of projects the caller is not a member of appear anonymous: the project as ~1, ~2, …, the id as a negative stand-in',
      },
    },
    async (req) => forecastInput(ctx, req.principal),
  );
}
