/** A project's registry credentials (migration 0022): the password only ever sealed here. */
import type { Selectable } from 'kysely';
import type { RegistryCredentialsTable } from '../schema.js';
import type { Db } from '../store.js';

export interface StoredRegistryCredential {
  project: string;
  registry: string;
  username: string;
  /** The password, sealed (store/secret-box.ts). */
  sealed: string;
  updatedBy: string;
  updatedAt: number;
}

/** Sets the project's credential for `registry`, replacing the one it had. */
export async function putRegistryCredential(db: Db, c: StoredRegistryCredential): Promise<void> {
  const row = {
    project: c.project,
    registry: c.registry,
    username: c.username,
    sealed: c.sealed,
    updated_by: c.updatedBy,
    updated_at: c.updatedAt,
  };
  await db
    .insertInto('registry_credentials')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['project', 'registry']).doUpdateSet({
        username: row.username,
        sealed: row.sealed,
        updated_by: row.updated_by,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

/** The project's credential for `registry`, if it has one. */
export async function findRegistryCredential(
  db: Db,
  project: string,
  registry: string,
): Promise<StoredRegistryCredential | undefined> {
  const r = await db
    .selectFrom('registry_credentials')
    .selectAll()
    .where('project', '=', project)
    .where('registry', '=', registry)
    .executeTakeFirst();
  return r && toCredential(r);
}

/** The project's credentials, by registry. */
export async function listRegistryCredentials(db: Db, project: string): Promise<StoredRegistryCredential[]> {
  const rows = await db
    .selectFrom('registry_credentials')
    .selectAll()
    .where('project', '=', project)
    .orderBy('registry')
    .execute();
  return rows.map(toCredential);
}

/** Removes the project's credential for `registry`; whether it had one. */
export async function deleteRegistryCredential(db: Db, project: string, registry: string): Promise<boolean> {
  // RETURNING: answered at once, also inside a group commit that keeps other writes behind.
  const rows = await db
    .deleteFrom('registry_credentials')
    .where('project', '=', project)
    .where('registry', '=', registry)
    .returning('registry')
    .execute();
  return rows.length > 0;
}

const toCredential = (r: Selectable<RegistryCredentialsTable>): StoredRegistryCredential => ({
  project: r.project,
  registry: r.registry,
  username: r.username,
  sealed: r.sealed,
  updatedBy: r.updated_by,
  updatedAt: Number(r.updated_at),
});
