/** The exec well with real shell scripts in a temporary directory. */
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExecWell, type ExecWellOptions } from '../../src/wells/exec.js';
import { WellError, type InstanceRequest } from '../../src/wells/well.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

let dir: string;
const req: InstanceRequest = { instanceId: 9, jobId: 42, project: 'team-a', type: 'rack-token' };

/** Writes an executable /bin/sh script and returns its name relative to `dir`. */
function script(name: string, body: string, mode = 0o755): string {
  writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
  chmodSync(join(dir, name), mode);
  return `./${name}`;
}

function well(
  create: string,
  destroy = script('noop.sh', 'exit 0'),
  extra: Partial<ExecWellOptions> = {},
): ExecWell {
  return new ExecWell({ type: 'rack-token', capacity: 1, create, destroy, baseDir: dir, ...extra });
}

/** `env` output as a record. */
function readEnv(file: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) env[line.slice(0, i)] = line.slice(i + 1);
  }
  return env;
}

/** Asserts a WellError whose message matches every pattern; returns it. */
async function failsWith(p: Promise<unknown>, ...patterns: RegExp[]): Promise<WellError> {
  const e = await p.then(
    () => assert.fail('expected a WellError'),
    (err: unknown) => err,
  );
  assert.ok(e instanceof WellError, String(e));
  for (const re of patterns) assert.match(e.message, re);
  return e;
}

before(() => {
  dir = realpathSync(scratchDir('berth-exec-well-'));
});

after(() => rmSync(dir, { recursive: true, force: true }));

void describe('exec well: create', () => {
  void test('the JSON object printed becomes the metadata; non-strings are JSON-stringified', async () => {
    const w = well(
      script(
        'meta.sh',
        `echo 'minting…' >&2
echo '{"host":"rack.example","port":8443,"scopes":["read","write"],"tls":{"verify":true},"ok":false,"none":null,"empty":""}'`,
      ),
    );
    assert.deepEqual(await w.create(req), {
      host: 'rack.example',
      port: '8443',
      scopes: '["read","write"]',
      tls: '{"verify":true}',
      ok: 'false',
      none: 'null',
      empty: '',
    });
  });

  void test('runs in baseDir with the BERTH_ variables, PATH, HOME, LANG and nothing else', async () => {
    process.env.BERTH_WELL_TEST_SECRET = 'must-not-leak';
    try {
      const w = well(script('env.sh', `env > "${dir}/create.env"\npwd > "${dir}/create.pwd"\necho '{}'`));
      assert.deepEqual(await w.create(req), {});
    } finally {
      delete process.env.BERTH_WELL_TEST_SECRET;
    }
    const env = readEnv(join(dir, 'create.env'));
    assert.equal(env.BERTH_JOB_ID, '42');
    assert.equal(env.BERTH_PROJECT, 'team-a');
    assert.equal(env.BERTH_RESOURCE_ID, '9');
    assert.equal(env.BERTH_RESOURCE_TYPE, 'rack-token');
    assert.equal(env.PATH, process.env.PATH);
    assert.equal(env.HOME, process.env.HOME);
    assert.equal(env.LANG, process.env.LANG);
    assert.equal(env.BERTH_RESOURCE_METADATA, undefined, 'create gets no metadata');
    // Whatever else is there, the shell set itself.
    const allowed = ['BERTH_JOB_ID', 'BERTH_PROJECT', 'BERTH_RESOURCE_ID', 'BERTH_RESOURCE_TYPE'];
    allowed.push('PATH', 'HOME', 'LANG', 'PWD', 'OLDPWD', 'SHLVL', '_');
    assert.deepEqual(
      Object.keys(env).filter((k) => !allowed.includes(k)),
      [],
    );
    assert.equal(readFileSync(join(dir, 'create.pwd'), 'utf8').trim(), dir);
  });

  void test('a non-zero exit names the program, the code and the last line of stderr', async () => {
    const w = well(
      script(
        'fail.sh',
        `echo 'contacting rack' >&2\necho '  quota exceeded for silo s1  ' >&2\necho >&2\nexit 3`,
      ),
    );
    const e = await failsWith(
      w.create(req),
      /exec well "rack-token": create program \S*\/fail\.sh exited with code 3: quota exceeded for silo s1$/,
    );
    assert.ok(!e.message.includes('contacting rack'), 'only the last line');
    assert.equal(e.retryable, true);
  });

  void test('a program killed by a signal says so', async () => {
    await failsWith(well(script('killed.sh', 'kill -9 $$')).create(req), /killed\.sh was killed by SIGKILL/);
  });

  void test('a long stderr line is cut short in the message', async () => {
    const w = well(script('noisy.sh', `head -c 20000 /dev/zero | tr '\\0' x >&2\nexit 1`));
    const e = await failsWith(w.create(req), /exited with code 1: x+…$/);
    assert.ok(e.message.length < 600, `message of ${e.message.length} characters`);
  });

  void test('output that is not a JSON object is refused, naming the program', async () => {
    for (const [name, out, why] of [
      ['text.sh', 'echo "token: abc"', /printed something that is not JSON/],
      ['array.sh', `echo '["a","b"]'`, /printed JSON that is not an object/],
      ['null.sh', 'echo null', /printed JSON that is not an object/],
      ['nothing.sh', 'echo "only stderr" >&2', /printed nothing/],
    ] as const) {
      const e = await failsWith(
        well(script(name, out)).create(req),
        new RegExp(`create program \\S*/${name} `),
        why,
      );
      assert.equal(e.retryable, false, name);
    }
  });

  void test('too much output is refused', async () => {
    const w = well(script('flood.sh', `head -c 2000000 /dev/zero | tr '\\0' ' '`));
    await failsWith(w.create(req), /flood\.sh printed more than 1048576 bytes/);
  });

  void test('a program that cannot be started is a non-retryable WellError naming it', async () => {
    const missing = await failsWith(
      well('./missing.sh').create(req),
      /create program \S*\/missing\.sh cannot be started \(ENOENT\)/,
    );
    assert.equal(missing.retryable, false);
    const plain = script('plain.sh', `echo '{}'`, 0o644);
    const e = await failsWith(well(plain).create(req), /plain\.sh cannot be started \(EACCES\)/);
    assert.equal(e.retryable, false);
  });

  void test('a timeout kills the program and everything it started', async () => {
    const w = well(
      script('hang.sh', `echo 'waiting for rack' >&2\nsleep 60 &\necho $! > "${dir}/sleep.pid"\nwait`),
      undefined,
      { timeoutMs: 1500 },
    );
    const started = Date.now();
    const e = await failsWith(w.create(req), /hang\.sh timed out after 1\.5 s: waiting for rack$/);
    assert.equal(e.retryable, true);
    // The background sleep holds stdout open: without ending the wait the call would take 60 s.
    assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
    const pid = Number(readFileSync(join(dir, 'sleep.pid'), 'utf8'));
    assert.ok(pid > 0);
    // Dead, or a zombie awaiting its reaper (a container's PID 1 may never reap it).
    await waitFor('the background sleep to die', () => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') === true;
      } catch {
        return true;
      }
    });
  });
});

void describe('exec well: destroy', () => {
  const recorder = () =>
    script(
      'destroy.sh',
      `env > "${dir}/destroy.env"\nprintf '%s' "$BERTH_RESOURCE_METADATA" > "${dir}/destroy.meta"`,
    );

  void test('receives the metadata as BERTH_RESOURCE_METADATA, with the other variables', async () => {
    const w = well(script('noop-create.sh', `echo '{}'`), recorder());
    const metadata = { token: 'tok en"\'$x', url: 'https://rack.example/api' };
    await w.destroy(req, metadata);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'destroy.meta'), 'utf8')), metadata);
    const env = readEnv(join(dir, 'destroy.env'));
    assert.deepEqual(
      [env.BERTH_JOB_ID, env.BERTH_PROJECT, env.BERTH_RESOURCE_ID, env.BERTH_RESOURCE_TYPE],
      ['42', 'team-a', '9', 'rack-token'],
    );
  });

  void test('gets {} when berth never learnt the metadata', async () => {
    await well(script('noop-create.sh', `echo '{}'`), recorder()).destroy(req, null);
    assert.equal(readFileSync(join(dir, 'destroy.meta'), 'utf8'), '{}');
  });

  void test('metadata printed by create reaches destroy unchanged', async () => {
    const w = well(script('mint.sh', `echo '{"id":"rk-'$BERTH_RESOURCE_ID'","n":3}'`), recorder());
    const metadata = await w.create(req);
    assert.deepEqual(metadata, { id: 'rk-9', n: '3' });
    await w.destroy(req, metadata);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'destroy.meta'), 'utf8')), metadata);
  });

  void test('a failing destroy is a retryable WellError naming the destroy program', async () => {
    const w = well(
      script('noop-create.sh', `echo '{}'`),
      script('revoke.sh', `echo 'rack unreachable' >&2\nexit 2`),
    );
    const e = await failsWith(
      w.destroy(req, null),
      /destroy program \S*\/revoke\.sh exited with code 2: rack unreachable$/,
    );
    assert.equal(e.retryable, true);
  });
});
