import type { BerthMigration } from './helpers.js';
import { bigint } from './helpers.js';

/**
 * When a user token was last used (ms), recorded at most about once a minute per token and
 * server (service/tenancy/token-cache.ts), so that it costs no write per request. A token's public id is
 * a prefix of its hash (domain/tokens.ts), so no id column is needed; expiry (`expires_at`) was
 * there from the start.
 */
export const tokenLife: BerthMigration = {
  async up(db) {
    await db.schema.alterTable('api_tokens').addColumn('last_used_at', bigint).execute();
  },
};
