/**
 * The `postgres` well: each instance is a database and a LOGIN role of the same deterministic
 * name, berth_r<instanceId>, on the server behind an admin connection URL. The role owns that
 * database and nothing else, and only it (and superusers) may connect to it. Deterministic names
 * let destroy work without metadata after a crash; two berth installations sharing one server
 * need different name prefixes (their instance ids overlap), and create refuses to take over a
 * role or database that already has the name.
 *
 * The admin role needs SUPERUSER, or CREATEDB and CREATEROLE: a non-superuser grants itself
 * membership in each role it makes, which CREATE DATABASE … OWNER and pg_terminate_backend
 * require. Needs PostgreSQL ≥ 14 (pg_terminate_backend with a timeout, DROP DATABASE … FORCE).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { scramSha256Verifier } from './scram.js';
import { WellError, type InstanceRequest, type Metadata, type Well } from './well.js';

const { DatabaseError, Pool, escapeIdentifier, escapeLiteral } = pg;

export interface PostgresWellOptions {
  type: string;
  capacity: number;
  /** Admin connection, e.g. postgres://postgres@127.0.0.1:5432/postgres; must name a host. */
  url: string;
  /** Names are PREFIX<instanceId>; default `berth_r`. Lower case letters, digits, `_`. */
  namePrefix?: string;
}

const DEFAULT_PREFIX = 'berth_r';

/** Where jobs reach the server: the admin URL's host and port; only sslmode carries over. */
interface Endpoint {
  host: string;
  port: string;
  sslmode: string | null;
}

/** Throws a plain Error (without echoing the URL, which may hold a password) when unusable. */
export function parseAdminUrl(url: string): Endpoint {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error('is not a URL; expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE');
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    throw new Error(`must start with postgres:// (not ${u.protocol}//)`);
  }
  // Jobs may run on other machines: a Unix socket path would mean nothing to them.
  if (u.hostname === '') throw new Error('must name a host (jobs connect to it over TCP)');
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: u.port || '5432',
    sslmode: u.searchParams.get('sslmode'),
  };
}

/** Connection problems and a busy server may pass; a refused statement will not. */
function isRetryable(e: unknown): boolean {
  if (!(e instanceof DatabaseError)) return true;
  return /^(08|40|53|55|57|58)/.test(e.code ?? '');
}

export class PostgresWell implements Well {
  readonly kind = 'postgres';
  readonly type: string;
  readonly capacity: number;
  private readonly endpoint: Endpoint;
  private readonly prefix: string;
  private readonly pool: pg.Pool;
  private superuser: Promise<boolean> | undefined;
  private closed = false;

  constructor(opts: PostgresWellOptions) {
    this.type = opts.type;
    this.capacity = opts.capacity;
    this.endpoint = parseAdminUrl(opts.url);
    this.prefix = opts.namePrefix ?? DEFAULT_PREFIX;
    // 47 + 16 digits of the largest safe integer fits PostgreSQL's 63-byte identifiers.
    if (!/^[a-z_][a-z0-9_]{0,46}$/.test(this.prefix)) {
      throw new Error(`postgres well: invalid name prefix ${JSON.stringify(this.prefix)}`);
    }
    this.pool = new Pool({
      connectionString: opts.url,
      max: 2,
      connectionTimeoutMillis: 10_000,
      idleTimeoutMillis: 10_000,
      statement_timeout: 120_000,
      application_name: `berth well ${opts.type}`,
      allowExitOnIdle: true,
    });
    // An idle connection dropped by the server is an 'error' event; unhandled it would end the
    // process. The next query simply opens a new connection.
    this.pool.on('error', () => {});
    this.pool.on('connect', (client) => client.on('error', () => {}));
  }

  /** The role and database name of an instance. */
  nameOf(instanceId: number): string {
    if (!Number.isSafeInteger(instanceId) || instanceId < 1) {
      throw new WellError(`postgres well "${this.type}": invalid instance id ${instanceId}`, false);
    }
    return `${this.prefix}${instanceId}`;
  }

  async create(req: InstanceRequest): Promise<Metadata> {
    const name = this.nameOf(req.instanceId);
    const ident = escapeIdentifier(name);
    const password = randomBytes(32).toString('base64url');
    const verifier = await scramSha256Verifier(password);
    let madeRole = false;
    let madeDatabase = false;
    try {
      await this.query(
        `CREATE ROLE ${ident} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS ` +
          `PASSWORD ${escapeLiteral(verifier)}`,
      );
      madeRole = true;
      if (!(await this.isSuperuser())) await this.query(`GRANT ${ident} TO CURRENT_USER`);
      // Closed to connections until PUBLIC's default CONNECT and TEMP are revoked: no window
      // in which another role could get in.
      await this.query(`CREATE DATABASE ${ident} OWNER ${ident} ALLOW_CONNECTIONS false`);
      madeDatabase = true;
      await this.query(`REVOKE ALL ON DATABASE ${ident} FROM PUBLIC`);
      await this.query(`ALTER DATABASE ${ident} ALLOW_CONNECTIONS true`);
    } catch (e) {
      // Undo only what this attempt made: a clash with an existing role or database must not
      // destroy it.
      if (madeDatabase) await this.query(`DROP DATABASE IF EXISTS ${ident} WITH (FORCE)`).catch(() => {});
      if (madeRole) await this.query(`DROP ROLE IF EXISTS ${ident}`).catch(() => {});
      throw this.failure(`cannot create role and database ${name}`, e);
    }
    const { host, port, sslmode } = this.endpoint;
    const enc = encodeURIComponent;
    const urlHost = host.includes(':') ? `[${host}]` : host;
    const query = sslmode ? `?sslmode=${enc(sslmode)}` : '';
    return {
      url: `postgres://${enc(name)}:${enc(password)}@${urlHost}:${port}/${enc(name)}${query}`,
      host,
      port,
      database: name,
      user: name,
      password,
    };
  }

  /** Works from the name alone, so metadata is not needed; idempotent. */
  async destroy(req: InstanceRequest, _metadata: Metadata | null): Promise<void> {
    const name = this.nameOf(req.instanceId);
    const ident = escapeIdentifier(name);
    try {
      // No new sessions while the old ones are ended.
      const role = await this.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name]);
      if (role.rowCount) await this.query(`ALTER ROLE ${ident} NOLOGIN`);
      // Sessions in the database, and the role's sessions elsewhere (their temporary objects
      // would block DROP ROLE); wait up to 5 s for each to exit.
      await this.query(
        `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
          WHERE (datname = $1 OR usename = $1) AND pid <> pg_backend_pid()`,
        [name],
      );
      await this.query(`DROP DATABASE IF EXISTS ${ident} WITH (FORCE)`);
      await this.query(`DROP ROLE IF EXISTS ${ident}`);
    } catch (e) {
      throw this.failure(`cannot drop database and role ${name}`, e);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  private async query(sql: string, params?: unknown[]): Promise<pg.QueryResult> {
    return this.pool.query(sql, params);
  }

  private isSuperuser(): Promise<boolean> {
    this.superuser ??= this.query('SELECT rolsuper FROM pg_roles WHERE rolname = current_user').then(
      (r) => (r.rows[0] as { rolsuper?: boolean } | undefined)?.rolsuper === true,
      (e: unknown) => {
        this.superuser = undefined;
        throw e;
      },
    );
    return this.superuser;
  }

  private failure(what: string, e: unknown): WellError {
    if (e instanceof WellError) return e;
    const detail = e instanceof Error ? e.message || e.constructor.name : String(e);
    let hint = '';
    if (e instanceof DatabaseError && (e.code === '42710' || e.code === '42P04')) {
      hint =
        ' (left over from an earlier attempt for this instance id, or another berth installation ' +
        'uses this server)';
    }
    return new WellError(`postgres well "${this.type}": ${what}: ${detail}${hint}`, isRetryable(e));
  }
}
