/** The pure scheduler: see scheduler.ts for the algorithm and types.ts for the contract. */
export { Scheduler } from './scheduler.js';
export type * from './types.js';
