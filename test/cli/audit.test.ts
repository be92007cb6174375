/** `berth token list|revoke`, `--expires`, and `berth audit`, as a user runs them. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fails, keyValues, ok, parseJson, row, rows, useCliServer } from './cli.js';
import type { TokenView } from '../../src/domain/tokens.js';

const ctx = useCliServer();
const { as, admin } = ctx;

describe('berth token', () => {
  let erin = '';

  it('creates a user and a token with --expires', async () => {
    const u = parseJson<{ token: string; tokenExpiresAt: string }>(
      await admin(['user', 'create', 'erin', '--expires', '90d', '-o', 'json']),
    );
    erin = u.token;
    assert.ok(Math.abs(Date.parse(u.tokenExpiresAt) - (Date.now() + 90 * 86_400_000)) < 60_000);
    const out = ok(await as(erin)(['user', 'token', 'erin', '--label', 'laptop', '--expires', '30d']));
    // 30 days on, in the reader's zone: the date and the time.
    assert.match(
      out,
      /^new token for erin: berth_\S+\nid: [0-9a-f]{12}\nexpires: \w{3} \d{1,2}( \d{4})? \d\d:\d\d\n/,
    );
    fails(
      await as(erin)(['user', 'token', 'erin', '--expires', 'soon']),
      1,
      /^berth: expiresIn "soon" is not a duration: write e\.g\. 30d/,
    );
  });

  it('lists your tokens (label, created, last used, expiry), never the tokens', async () => {
    const out = ok(await as(erin)(['token', 'list']));
    assert.deepEqual(rows(out)[0], ['ID', 'LABEL', 'CREATED', 'LAST USED', 'EXPIRES']);
    const laptop = row(out, 'LABEL', 'laptop');
    assert.match(laptop.ID!, /^[0-9a-f]{12}$/);
    assert.equal(laptop['LAST USED'], '-');
    assert.match(laptop.EXPIRES!, /^\w{3} \d{1,2}( \d{4})? \d\d:\d\d$/);
    assert.ok(!out.includes('berth_'), 'a token in the list');
    const json = parseJson<TokenView[]>(await as(erin)(['token', 'list', '-o', 'json']));
    assert.deepEqual(
      json.map((t) => t.label),
      ['initial token', 'laptop'],
    );
    // Admins list anyone's; users only their own.
    assert.equal(row(ok(await admin(['token', 'list', '--user', 'erin'])), 'LABEL', 'laptop').ID, laptop.ID);
    fails(
      await as(erin)(['token', 'list', '--user', 'admin']),
      1,
      /^berth: only admins can list other users' tokens\n$/,
    );
  });

  it('revokes a token by its id: it stops working at once', async () => {
    const t = parseJson<{ id: string; token: string }>(
      await as(erin)(['user', 'token', 'erin', '-o', 'json']),
    );
    assert.equal(keyValues(ok(await as(t.token)(['whoami']))).user, 'erin');
    assert.equal(ok(await as(erin)(['token', 'revoke', t.id])), `token ${t.id} ("token") of erin revoked\n`);
    fails(await as(t.token)(['whoami']), 1, /^berth: invalid token \(token from BERTH_TOKEN\)\n$/);
    fails(await as(erin)(['token', 'revoke', t.id]), 1, new RegExp(`^berth: token ${t.id} not found`));
  });
});

describe('berth audit', () => {
  it('shows who changed what, when and from where; filters by user and project', async () => {
    ok(await admin(['user', 'create', 'frank']));
    ok(await admin(['project', 'create', 'audited', '--queue', 'default']));
    const out = ok(await admin(['audit', '--since', '1h']));
    assert.deepEqual(rows(out)[0], ['TIME', 'WHO', 'FROM', 'ACTION', 'SUBJECT', 'PROJECT', 'DETAIL']);
    const created = row(out, 'SUBJECT', 'frank');
    assert.deepEqual([created.WHO, created.FROM, created.ACTION], ['admin', '127.0.0.1', 'user.create']);

    const json = parseJson<{ actor: string; action: string; subject: string; project: string | null }[]>(
      await admin(['audit', '--project', 'audited', '-o', 'json']),
    );
    assert.deepEqual(
      json.map((e) => [e.actor, e.action, e.subject]),
      [['admin', 'project.create', 'audited']],
    );
    const erins = parseJson<{ actor: string }[]>(await admin(['audit', '--user', 'erin', '-o', 'json']));
    assert.ok(erins.length >= 3 && erins.every((e) => e.actor === 'erin'));
    const two = parseJson<unknown[]>(await admin(['audit', '--limit', '2', '-o', 'json']));
    assert.equal(two.length, 2);
    assert.equal(ok(await admin(['audit', '--user', 'nobody'])), 'no changes recorded that match\n');
  });

  it('is for admins; a bad time is a usage error', async () => {
    const u = parseJson<{ token: string }>(await admin(['user', 'create', 'gina', '-o', 'json']));
    fails(await as(u.token)(['audit']), 1, /^berth: only admins can read the audit log\n$/);
    fails(await admin(['audit', '--since', 'yesterday']), 2, /--since.*must be a time/);
  });
});
