import type { BerthMigration } from './helpers.js';

/**
 * What a project token (the `token` well's) may do in its project: `read` or `submit`
 * (domain/tokens.ts). Null on every other token, and on project tokens minted before this
 * column existed — those read only, the least, rather than keep the member's rights they had.
 */
export const tokenAccess: BerthMigration = {
  async up(db) {
    await db.schema.alterTable('api_tokens').addColumn('access', 'text').execute();
  },
};
