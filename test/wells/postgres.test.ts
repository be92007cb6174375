/**
 * The postgres well against the real server at 127.0.0.1:5432 (or BERTH_TEST_PG_URL). Instance
 * ids are random and large, so runs in parallel with others on the same server do not clash;
 * everything made here is dropped afterwards.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { PostgresWell } from '../../src/wells/postgres.js';
import { WellError, type InstanceRequest, type Metadata } from '../../src/wells/well.js';
import { scramAuthenticates } from './scram-check.js';

const ADMIN_URL = process.env.BERTH_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const base = randomInt(1_000_000_000, 2_000_000_000);
let next = 0;
const made: string[] = [];

function newRequest(): InstanceRequest {
  const instanceId = base + next++;
  made.push(`berth_r${instanceId}`);
  return { instanceId, jobId: 7, project: 'team-a', type: 'scratch-db' };
}

let admin: pg.Client;
let well: PostgresWell;

async function exists(name: string): Promise<{ database: boolean; role: boolean }> {
  const r = await admin.query<{ database: boolean; role: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS database,
            EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AS role`,
    [name],
  );
  const row = r.rows[0];
  assert.ok(row);
  return row;
}

/** A connection as the instance's role; errors after connecting are collected, not thrown. */
async function connect(url: string, database?: string): Promise<{ client: pg.Client; errors: Error[] }> {
  const u = new URL(url);
  if (database) u.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: u.toString() });
  const errors: Error[] = [];
  client.on('error', (e) => errors.push(e));
  await client.connect();
  return { client, errors };
}

const code = (e: unknown) => (e as { code?: string }).code;

before(async () => {
  admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  well = new PostgresWell({ type: 'scratch-db', capacity: 4, url: ADMIN_URL });
});

after(async () => {
  for (const name of made) {
    const ident = pg.escapeIdentifier(name);
    await admin.query(`DROP DATABASE IF EXISTS ${ident} WITH (FORCE)`);
    await admin.query(`DROP ROLE IF EXISTS ${ident}`);
  }
  await well.close();
  await admin.end();
});

void describe('postgres well: create', () => {
  void test('makes a database owned by a new login role that owns nothing else and has no powers', async () => {
    const req = newRequest();
    const name = `berth_r${req.instanceId}`;
    assert.deepEqual(await exists(name), { database: false, role: false });
    const md = await well.create(req);
    try {
      assert.deepEqual(Object.keys(md).sort(), ['database', 'host', 'password', 'port', 'url', 'user']);
      assert.equal(md.database, name);
      assert.equal(md.user, name);
      assert.equal(md.host, '127.0.0.1');
      assert.equal(md.port, '5432');
      assert.match(md.password ?? '', /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
      const u = new URL(md.url ?? '');
      assert.deepEqual(
        [
          u.protocol,
          decodeURIComponent(u.username),
          decodeURIComponent(u.password),
          u.hostname,
          u.port,
          u.pathname,
        ],
        ['postgres:', name, md.password, '127.0.0.1', '5432', `/${name}`],
      );
      assert.deepEqual(await exists(name), { database: true, role: true });

      const role = await admin.query(
        `SELECT rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls,
                (SELECT count(*)::int FROM pg_database WHERE datdba = r.oid) AS databases,
                (SELECT count(*)::int FROM pg_auth_members WHERE member = r.oid) AS memberships,
                (SELECT datname FROM pg_database WHERE datdba = r.oid LIMIT 1) AS owns
           FROM pg_roles r WHERE rolname = $1`,
        [name],
      );
      assert.deepEqual(role.rows[0], {
        rolcanlogin: true,
        rolsuper: false,
        rolcreatedb: false,
        rolcreaterole: false,
        rolreplication: false,
        rolbypassrls: false,
        databases: 1,
        memberships: 0,
        owns: name,
      });
      const pub = await admin.query(
        `SELECT has_database_privilege('public', $1, 'CONNECT') AS connect,
                has_database_privilege('public', $1, 'TEMP') AS temp,
                (SELECT datallowconn FROM pg_database WHERE datname = $1) AS allowconn`,
        [name],
      );
      assert.deepEqual(pub.rows[0], { connect: false, temp: false, allowconn: true });
    } finally {
      await well.destroy(req, md);
    }
  });

  void test('the role connects with the returned url and can create a table in its database', async () => {
    const req = newRequest();
    const md = await well.create(req);
    const { client } = await connect(md.url ?? '');
    try {
      const who = await client.query('SELECT current_user AS u, current_database() AS d');
      assert.deepEqual(who.rows[0], { u: md.user, d: md.database });
      await client.query('CREATE TABLE results (id int PRIMARY KEY, note text)');
      await client.query(`INSERT INTO results VALUES (1, 'ok')`);
      const rows = await client.query('SELECT note FROM results');
      assert.deepEqual(rows.rows, [{ note: 'ok' }]);
    } finally {
      await client.end();
      await well.destroy(req, md);
    }
  });

  void test('the password is stored only as a SCRAM verifier that the returned password satisfies', async () => {
    const req = newRequest();
    const md = await well.create(req);
    try {
      const r = await admin.query<{ rolpassword: string }>(
        'SELECT rolpassword FROM pg_authid WHERE rolname = $1',
        [md.user],
      );
      const verifier = r.rows[0]?.rolpassword ?? '';
      assert.match(verifier, /^SCRAM-SHA-256\$4096:/);
      assert.ok(!verifier.includes(md.password ?? '-'), 'no clear text stored');
      assert.equal(await scramAuthenticates(verifier, md.password ?? ''), true);
      assert.equal(await scramAuthenticates(verifier, `${md.password}x`), false);
    } finally {
      await well.destroy(req, md);
    }
  });

  void test('two instances made at once: neither role can connect to the other database', async () => {
    const [ra, rb] = [newRequest(), newRequest()];
    const [a, b] = await Promise.all([well.create(ra), well.create(rb)]);
    try {
      assert.notEqual(a.password, b.password);
      await assert.rejects(connect(a.url ?? '', b.database), (e) => code(e) === '42501');
      await assert.rejects(connect(b.url ?? '', a.database), (e) => code(e) === '42501');
      // The refusal is about the database, not the role: each still gets into its own.
      const own = await connect(a.url ?? '');
      await own.client.end();
    } finally {
      await Promise.all([well.destroy(ra, a), well.destroy(rb, b)]);
    }
  });

  void test('a clash with an existing role fails without retry and leaves that role alone', async () => {
    const req = newRequest();
    const name = `berth_r${req.instanceId}`;
    await admin.query(`CREATE ROLE ${pg.escapeIdentifier(name)} NOLOGIN`);
    await assert.rejects(
      well.create(req),
      (e) =>
        e instanceof WellError &&
        !e.retryable &&
        e.message.includes(name) &&
        /already exists/.test(e.message) &&
        e.message.includes('scratch-db'),
    );
    assert.deepEqual(await exists(name), { database: false, role: true });
    await well.destroy(req, null);
    assert.deepEqual(await exists(name), { database: false, role: false });
  });

  void test('a clash with an existing database undoes the new role but keeps that database', async () => {
    const req = newRequest();
    const name = `berth_r${req.instanceId}`;
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    await assert.rejects(
      well.create(req),
      (e) => e instanceof WellError && !e.retryable && /already exists/.test(e.message),
    );
    assert.deepEqual(await exists(name), { database: true, role: false });
    await well.destroy(req, null);
    assert.deepEqual(await exists(name), { database: false, role: false });
  });

  void test('a server that cannot be reached is a retryable WellError', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });
    const down = new PostgresWell({
      type: 'scratch-db',
      capacity: 1,
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    });
    try {
      await assert.rejects(
        down.create(newRequest()),
        (e) => e instanceof WellError && e.retryable && /ECONNREFUSED/.test(e.message),
      );
      await assert.rejects(down.destroy(newRequest(), null), (e) => e instanceof WellError && e.retryable);
    } finally {
      await down.close();
    }
  });
});

void describe('postgres well: destroy', () => {
  void test('drops database and role, also while the role still has a connection open', async () => {
    const req = newRequest();
    const md = await well.create(req);
    const { client, errors } = await connect(md.url ?? '');
    await client.query('SELECT 1');
    await well.destroy(req, md);
    assert.deepEqual(await exists(`berth_r${req.instanceId}`), { database: false, role: false });
    // The session was ended by the server: its next query fails, and 57P01 (admin shutdown)
    // arrived either as the connection's error event or as that query's error.
    const queryError = await client.query('SELECT 1').then(
      () => assert.fail('the connection survived destroy'),
      (e: unknown) => e,
    );
    assert.ok(
      [queryError, ...errors].some((e) => code(e) === '57P01'),
      String(queryError),
    );
    await client.end().catch(() => {});
  });

  void test('with null metadata after a create (a crash before confirming), and twice', async () => {
    const req = newRequest();
    const name = `berth_r${req.instanceId}`;
    await well.create(req);
    assert.deepEqual(await exists(name), { database: true, role: true });
    await well.destroy(req, null);
    assert.deepEqual(await exists(name), { database: false, role: false });
    await well.destroy(req, null);
    assert.deepEqual(await exists(name), { database: false, role: false });
  });

  void test('of an instance that was never made succeeds', async () => {
    const req = newRequest();
    await well.destroy(req, null);
    assert.deepEqual(await exists(`berth_r${req.instanceId}`), { database: false, role: false });
  });

  void test('refuses an instance id that cannot name a role', async () => {
    const req: InstanceRequest = { instanceId: -1, jobId: 1, project: 'p', type: 'scratch-db' };
    await assert.rejects(well.destroy(req, null), (e) => e instanceof WellError && !e.retryable);
    await assert.rejects(
      well.create({ ...req, instanceId: 1.5 }),
      (e) => e instanceof WellError && !e.retryable,
    );
  });
});

void describe('postgres well: name prefix', () => {
  void test('names role and database PREFIX<instanceId>, and drops them by that name', async () => {
    const prefix = `berth_t${base}_`;
    const prefixed = new PostgresWell({
      type: 'scratch-db',
      capacity: 1,
      url: ADMIN_URL,
      namePrefix: prefix,
    });
    const req = newRequest();
    const name = `${prefix}${req.instanceId}`;
    made.push(name);
    try {
      const md = await prefixed.create(req);
      assert.deepEqual([md.user, md.database], [name, name]);
      assert.deepEqual(await exists(name), { database: true, role: true });
      assert.deepEqual(await exists(`berth_r${req.instanceId}`), { database: false, role: false });
      await prefixed.destroy(req, null);
      assert.deepEqual(await exists(name), { database: false, role: false });
    } finally {
      await prefixed.close();
    }
  });

  void test('refuses a prefix that is not a plain lower-case identifier', () => {
    for (const namePrefix of ['Berth_', 'berth-', '1berth', '', 'x'.repeat(48)]) {
      assert.throws(
        () => new PostgresWell({ type: 'scratch-db', capacity: 1, url: ADMIN_URL, namePrefix }),
        /invalid name prefix/,
        namePrefix,
      );
    }
  });
});

void describe('postgres well: admin without SUPERUSER (CREATEDB, CREATEROLE)', () => {
  const adminRole = `berth_wadm_${base}`;
  let limited: PostgresWell;

  before(async () => {
    await admin.query(`CREATE ROLE ${pg.escapeIdentifier(adminRole)} LOGIN CREATEDB CREATEROLE`);
    const u = new URL(ADMIN_URL);
    u.username = adminRole;
    u.password = '';
    limited = new PostgresWell({ type: 'scratch-db', capacity: 1, url: u.toString() });
  });

  after(async () => {
    await limited.close();
    await admin.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(adminRole)}`);
  });

  void test('creates, serves and destroys an instance, ending an open session', async () => {
    const req = newRequest();
    const name = `berth_r${req.instanceId}`;
    let md: Metadata | null = null;
    try {
      md = await limited.create(req);
      const owner = await admin.query(
        'SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1',
        [name],
      );
      assert.deepEqual(owner.rows, [{ owner: name }]);
      const { client } = await connect(md.url ?? '');
      await client.query('CREATE TABLE t (x int)');
      await limited.destroy(req, md);
      await assert.rejects(client.query('SELECT 1'));
      await client.end().catch(() => {});
      assert.deepEqual(await exists(name), { database: false, role: false });
    } finally {
      if (md) await limited.destroy(req, null);
    }
  });
});
