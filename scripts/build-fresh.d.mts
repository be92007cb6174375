/** True when every src/X.ts has a dist/X.js at least as new as it (scripts/build-fresh.mjs). */
export function buildIsFresh(root?: string): boolean;
