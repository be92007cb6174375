/** `berth user …`, plus what every command shares: help, usage errors, exit codes. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allFail, berth, fails, keyValues, ok, parseJson, row, useCliServer } from './cli.js';

const ctx = useCliServer();
const { as, admin } = ctx;

describe('users', () => {
  let aliceToken: string;

  it('creates a user and prints its token once; the token works', async () => {
    const out = ok(await admin(['user', 'create', 'alice']));
    const m = /^user alice created\ntoken: (berth_\S+)\n\(store it now: it is shown only once\)\n$/.exec(out);
    assert.ok(m, out);
    aliceToken = m[1]!;
    assert.equal(keyValues(ok(await as(aliceToken)(['whoami']))).user, 'alice');
  });

  it('creates an admin; -o json carries the token', async () => {
    const u = parseJson<{ name: string; admin: boolean; token: string }>(
      await admin(['user', 'create', 'root2', '--admin', '-o', 'json']),
    );
    assert.deepEqual([u.name, u.admin], ['root2', true]);
    assert.equal(keyValues(ok(await as(u.token)(['whoami']))).admin, 'yes');
  });

  it('lists users', async () => {
    const out = ok(await admin(['user', 'list']));
    assert.deepEqual(
      [row(out, 'NAME', 'alice').ADMIN, row(out, 'NAME', 'root2').ADMIN, row(out, 'NAME', 'admin').ADMIN],
      ['no', 'yes', 'yes'],
    );
    fails(await as(aliceToken)(['user', 'list']), 1, /^berth: only admins can list users\n$/);
  });

  it('issues new tokens, for others (admin) and for oneself', async () => {
    const t = parseJson<{ name: string; token: string }>(
      await admin(['user', 'token', 'alice', '--label', 'ci', '-o', 'json']),
    );
    assert.equal(t.name, 'alice');
    assert.notEqual(t.token, aliceToken);
    assert.match(ok(await as(t.token)(['user', 'token', 'alice'])), /^new token for alice: berth_\S+\n/);
    fails(await as(aliceToken)(['user', 'token', 'admin']), 1, /only admins can create other users' tokens/);
  });

  it('deletes a user; its tokens stop working', async () => {
    assert.equal(ok(await admin(['user', 'delete', 'alice'])), 'user alice deleted\n');
    fails(await as(aliceToken)(['whoami']), 1, /^berth: .*token.*\(token from BERTH_TOKEN\)\n$/);
    fails(await admin(['user', 'delete', 'alice']), 1, /^berth: user "alice" not found\n$/);
    fails(await admin(['user', 'delete', 'admin']), 1, /^berth: you cannot delete yourself\n$/);
  });

  it("rejects a bad user name with the API's message", async () => {
    fails(await admin(['user', 'create', 'Bad Name']), 1, /^berth: user name "Bad Name" must be/);
  });
});

describe('help and usage errors', () => {
  it('prints help with examples, exit 0', async () => {
    const out = ok(await berth(ctx.sb, ['queue', 'create', '--help']));
    assert.match(out, /^Usage: berth queue create \[options\] <name>/);
    assert.match(out, /--quota <quantities>/);
    assert.match(out, /\nExamples:\n {2}\$ berth queue create research --quota cpu=8,memory=32Gi,jobs=10\n/);
    assert.match(ok(await berth(ctx.sb, ['--help'])), /Commands:[\s\S]*project[\s\S]*queue[\s\S]*user/);
  });

  it('reports unknown commands and options in one line, exit 2', async () => {
    await allFail([
      [
        berth(ctx.sb, ['projetc', 'list']),
        2,
        /^berth: unknown command 'projetc' \(Did you mean project\?\)\n$/,
      ],
      [berth(ctx.sb, ['project', 'list', '--bogus']), 2, /^berth: unknown option '--bogus'\n$/],
      [berth(ctx.sb, ['project', 'show', 'a', 'b']), 2, /^berth: too many arguments for 'show'/],
      [berth(ctx.sb, ['user', 'create']), 2, /^berth: missing required argument 'name'\n$/],
    ]);
  });

  it("prints the group's help on stderr when a subcommand is missing, exit 2", async () => {
    const r = await berth(ctx.sb, ['project']);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /^Usage: berth project \[options\] \[command\]\n[\s\S]*\n {2}create \[options\] <name>/,
    );
  });
});
