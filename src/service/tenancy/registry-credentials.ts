/**
 * A project's credentials for the registries its jobs' images come from (docs/IMAGES.md, "Private
 * registries"): set, listed and removed by its owners and by admins; the password sealed with the
 * installation's key (store/secret-box.ts) and never shown again — not in a view, the audit log,
 * or a job's environment. The registry's questions and pulls for the project's jobs alone use it
 * (controller/provisioning.ts, factories/worker-images.ts).
 */
import { BadRequestError, ConflictError, NotFoundError } from '../../domain/errors.js';
import {
  credentialContext,
  type RegistryAuth,
  type RegistryCredentialView,
} from '../../domain/registry-credential.js';
import type { Principal } from '../../domain/user.js';
import { registryName } from '../../images/reference.js';
import {
  deleteRegistryCredential,
  findRegistryCredential,
  listRegistryCredentials,
  putRegistryCredential,
  type StoredRegistryCredential,
} from '../../store/queries/registry-credentials.js';
import { SecretKeyError, type SecretBox } from '../../store/secret-box.js';
import type { Db } from '../../store/store.js';
import { iso } from '../../store/queries/time.js';
import type { ServiceContext } from '../context.js';
import { write } from '../jobs/jobs.js';
import { actorName, requireProject } from './access.js';
import { audit } from './audit.js';

/** `registry` checked as a registry's name: 400 saying what one is. */
function checkRegistry(registry: string): string {
  const name = registryName(registry);
  if (!name)
    throw new BadRequestError(
      `registry ${JSON.stringify(registry)} is not a registry's name: a host with an optional port, as image references name it (registry.example.org, 127.0.0.1:5000, docker.io)`,
    );
  return name;
}

/** The installation's secret box; 409 saying why there is none. */
function box(ctx: ServiceContext): SecretBox {
  try {
    if (!ctx.secrets) throw new SecretKeyError('this server keeps no secrets');
    return ctx.secrets();
  } catch (e) {
    if (e instanceof SecretKeyError)
      throw new ConflictError(`registry credentials cannot be kept: ${e.message}`);
    throw e;
  }
}

const view = (c: StoredRegistryCredential): RegistryCredentialView => ({
  registry: c.registry,
  username: c.username,
  updatedBy: c.updatedBy,
  updatedAt: iso(c.updatedAt),
});

/** Sets (or replaces) the project's credential for `registry`. */
export async function setRegistryCredential(
  ctx: ServiceContext,
  p: Principal,
  project: string,
  registry: string,
  body: { username: string; password: string },
): Promise<RegistryCredentialView> {
  const name = checkRegistry(registry);
  await requireProject(ctx.store.db, p, project, 'owner', 'setting registry credentials');
  const sealed = box(ctx).seal(body.password, credentialContext(project, name));
  const stored: StoredRegistryCredential = {
    project,
    registry: name,
    username: body.username,
    sealed,
    updatedBy: actorName(p),
    updatedAt: ctx.now(),
  };
  await write(ctx, async (db) => {
    await putRegistryCredential(db, stored);
    // The user name, never the password.
    await audit(
      db,
      p,
      { action: 'registry.login', subject: name, project, detail: { username: body.username } },
      stored.updatedAt,
    );
  });
  return view(stored);
}

export async function listProjectRegistries(
  ctx: ServiceContext,
  p: Principal,
  project: string,
): Promise<RegistryCredentialView[]> {
  await requireProject(ctx.store.db, p, project, 'owner', 'listing registry credentials');
  return (await listRegistryCredentials(ctx.store.db, project)).map(view);
}

export async function removeRegistryCredential(
  ctx: ServiceContext,
  p: Principal,
  project: string,
  registry: string,
): Promise<void> {
  const name = checkRegistry(registry);
  await requireProject(ctx.store.db, p, project, 'owner', 'removing registry credentials');
  await write(ctx, async (db) => {
    if (!(await deleteRegistryCredential(db, project, name)))
      throw new NotFoundError(`project "${project}" has no credentials for registry ${name}`);
    await audit(db, p, { action: 'registry.logout', subject: name, project }, ctx.now());
  });
}

/**
 * The project's credential for `registry`, in the clear, for one question or pull of its job's
 * image; undefined when it has none. A credential that does not open (another key) is an error
 * that says so, never a pull without it.
 */
export async function registryAuth(
  db: Db,
  secrets: (() => SecretBox) | undefined,
  project: string,
  registry: string,
): Promise<RegistryAuth | undefined> {
  const c = await findRegistryCredential(db, project, registry);
  if (!c) return undefined;
  if (!secrets) throw new SecretKeyError('this server keeps no secrets');
  const password = secrets().unseal(c.sealed, credentialContext(project, registry));
  return { registry, username: c.username, password };
}
