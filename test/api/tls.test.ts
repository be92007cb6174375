/**
 * HTTPS: a server with `tls` serves it, with certificates openssl makes at test time; the CLI and
 * `berth agent` verify it (the built-in CAs, plus `--ca`, BERTH_CA, a context's `ca`, or a local
 * server's own certificate); the local factory's agents trust it by themselves; and the server
 * refuses to start on a bad certificate or key, or on plain HTTP off the loopback unless told.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { resolveConfig, validateConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/domain/errors.js';
import { startServer, type ServerOptions } from '../../src/server/run.js';
import { berth, fails, keyValues, ok, readConfig, row, sandbox, useCliServer } from '../cli/cli.js';
import { makeTestCerts } from '../helpers/certs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { serverDatabase } from '../helpers/store.js';
import { scratchDir } from '../helpers/scratch.js';

const certs = makeTestCerts();
after(() => certs.remove());

/** GET `url` over node:http(s): the status, or the error when no answer came. */
function get(url: string, ca?: string): Promise<number> {
  const https = url.startsWith('https:');
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(url, ca ? { ca } : {}, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('a server with tls', () => {
  const s = useCliServer(undefined, {
    config: `tls: { cert: ${certs.cert}, key: ${certs.key} }\n${localFactoryConfig(2)}\n`,
  });
  /** BERTH_URL and the admin's BERTH_TOKEN, and `env`. */
  const run = (args: string[], env: Record<string, string> = {}) =>
    berth(s.sb, args, { env: { ...s.connection(), ...env } });

  it('serves HTTPS only: verified with its CA, and plain HTTP to its port gets no answer', async () => {
    const { url } = s.server;
    assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(await get(`${url}/api/v1/health`, readFileSync(certs.ca, 'utf8')), 200);
    await assert.rejects(get(`${url.replace('https:', 'http:')}/api/v1/health`));
    fails(
      await run(['whoami'], { BERTH_URL: url.replace('https:', 'http:'), BERTH_CA: certs.ca }),
      1,
      /^berth: cannot reach berth at http:\/\/127\.0\.0\.1:\d+: connection reset \(if the server serves HTTPS, use https:\/\/\)\n$/,
    );
  });

  it("runs a job submitted over HTTPS on the local factory, whose agents trust the server's certificate", async () => {
    const job = ['sh', '-c', 'echo "hello over tls"; printenv BERTH_CA'];
    const r = await run(['submit', '--follow', '--', ...job], { BERTH_CA: certs.ca });
    assert.equal(r.code, 0, r.stderr);
    // Its output came back through the log stream; the job got the CA file for its own `berth`.
    assert.equal(r.stdout, `hello over tls\n${certs.cert}\n`);
  });

  it('refuses a certificate no CA it trusts signed, in one line saying what it trusted', async () => {
    const [none, other, missing] = await Promise.all([
      run(['whoami']),
      run(['whoami'], { BERTH_CA: certs.otherCa }),
      run(['whoami'], { BERTH_CA: join(certs.dir, 'nope.pem') }),
    ]);
    fails(
      none,
      1,
      /^berth: cannot reach berth at https:\/\/127\.0\.0\.1:\d+: TLS certificate not signed by a trusted CA \(trusted: Node's built-in CAs; give its CA with BERTH_CA=FILE, or berth login --ca FILE\)\n$/,
    );
    fails(
      other,
      1,
      /TLS certificate not signed by a trusted CA \(trusted: Node's built-in CAs and \S+other-ca\.pem \(from BERTH_CA\)\)\n$/,
    );
    fails(missing, 1, /^berth: BERTH_CA: cannot read \S+nope\.pem: no such file\n$/);
  });

  it('login --ca checks with the CA and saves it in the context, which later commands trust', async () => {
    const sb = sandbox();
    try {
      const login = ['login', '--url', s.server.url, '--token', s.server.adminToken, '--name', 'tls'];
      fails(await berth(sb, login), 1, /TLS certificate not signed by a trusted CA/);
      ok(await berth(sb, [...login, '--ca', certs.ca]));
      assert.equal(readConfig(sb).contexts.tls?.ca, certs.ca);
      const me = keyValues(ok(await berth(sb, ['whoami'])));
      assert.equal(me.ca, `${certs.ca} (from context "tls")`);
      assert.equal(row(ok(await berth(sb, ['context', 'list'])), 'NAME', 'tls').CA, certs.ca);
    } finally {
      sb.remove();
    }
  });

  it('finds a local server with its own certificate, and trusts that certificate', async () => {
    const me = keyValues(ok(await berth(s.sb, ['whoami'], { env: { BERTH_DATA_DIR: s.server.dataDir } })));
    assert.equal(me.server, s.server.url);
    assert.equal(me.ca, `${certs.cert} (from local server in ${s.server.dataDir} (its certificate))`);
  });

  it('berth agent verifies the server with --ca or BERTH_CA, and fails at once without', async () => {
    const agent = ['agent', '--server', s.server.url, '--worker', '1'];
    const env = { BERTH_AGENT_CREDENTIAL: 'berth_not_a_credential' };
    const [untrusted, flag, fromEnv, unreadable] = await Promise.all([
      berth(s.sb, agent, { env }),
      berth(s.sb, [...agent, '--ca', certs.ca], { env }),
      berth(s.sb, agent, { env: { ...env, BERTH_CA: certs.ca } }),
      berth(s.sb, [...agent, '--ca', join(certs.dir, 'nope.pem')], { env }),
    ]);
    fails(
      untrusted,
      1,
      /^berth: cannot verify the server's TLS certificate: unable to verify the first certificate/,
    );
    // Past TLS, the server itself refuses the credential.
    fails(flag, 1, /^berth: registering worker 1: /);
    fails(fromEnv, 1, /^berth: registering worker 1: /);
    fails(unreadable, 1, /^berth: --ca: cannot read \S+nope\.pem: no such file\n$/);
  });
});

describe('start-up checks', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const tempDir = () => {
    const d = scratchDir('berth-tls-');
    dirs.push(d);
    return d;
  };
  /** A berth.yaml of `text` in the certificates' directory (relative paths resolve there). */
  const configFile = (text: string) => {
    const file = join(mkdtempSync(join(certs.dir, 'config-')), 'berth.yaml');
    writeFileSync(file, text);
    return file;
  };
  /** The message of the ConfigError that stops a server started with `opts`. */
  async function refusal(opts: ServerOptions): Promise<string> {
    const err = await startServer({
      dataDir: tempDir(),
      listen: '127.0.0.1:0',
      print: () => {},
      ...opts,
    }).then(
      async (server) => {
        await server.close();
        assert.fail('the server started');
      },
      (e: unknown) => e,
    );
    assert.ok(err instanceof ConfigError, `not a ConfigError: ${String(err)}`);
    return err.message;
  }
  /** Starts a server with `opts`, returns what it printed at start, and stops it. */
  async function printed(opts: ServerOptions): Promise<string[]> {
    // Made by the server, so the server's alone: no warning of a data directory others could read.
    const dataDir = join(tempDir(), 'data');
    const database = await serverDatabase(dataDir);
    const lines: string[] = [];
    const server = await startServer({
      dataDir,
      database: database?.url,
      print: (l) => lines.push(l),
      ...opts,
    });
    await server.close();
    await database?.drop();
    return lines;
  }

  /** The lines about listening and TLS, without a replica's lines about its role (PostgreSQL). */
  const onlyOurs = (lines: string[]): string[] => lines.filter((l) => /listening on|^warning:/.test(l));

  it('refuses plain HTTP on a non-loopback address unless insecureHttp is set, in one line naming it', async () => {
    const sb = sandbox();
    try {
      fails(
        // No config file (an empty working directory): as `berth server --listen …` on a fresh machine.
        await berth(sb, ['server', '--data-dir', tempDir(), '--listen', '0.0.0.0:0']),
        1,
        /^berth: invalid configuration: --listen: 0\.0\.0\.0 is not a loopback address: serve HTTPS with tls: \{cert, key\} \(--tls-cert, --tls-key\), or allow plain HTTP with insecureHttp: true \(--insecure-http\)\n$/,
      );
    } finally {
      sb.remove();
    }
    assert.match(
      await refusal({ configFile: configFile('listen: "[::]:0"\n'), listen: undefined }),
      /berth\.yaml: listen: :: is not a loopback address: .*insecureHttp: true/,
    );
    // On PostgreSQL the server also says it leads (replicas): only these lines matter here.
    const lines = onlyOurs(
      await printed({ configFile: '/dev/null', listen: '0.0.0.0:0', insecureHttp: true }),
    );
    assert.match(lines[0] ?? '', /^berth \S+ listening on http:\/\/0\.0\.0\.0:\d+$/);
    assert.match(
      lines[1] ?? '',
      /^warning: serving plain HTTP on 0\.0\.0\.0:0 \(insecureHttp\): tokens and job logs cross the network unencrypted/,
    );
    // On the loopback, as with no config at all: plain HTTP and no warning.
    const plain = onlyOurs(await printed({ configFile: '/dev/null', listen: '127.0.0.1:0' }));
    assert.match(plain[0] ?? '', /^berth \S+ listening on http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(plain.filter((l) => l.startsWith('warning:')).length, 0);
  });

  it('stops on a missing or invalid certificate or key, naming the setting', async () => {
    const garbage = join(certs.dir, 'garbage.pem');
    writeFileSync(garbage, 'not a certificate\n');
    const tls = (cert: string, key: string) => configFile(`tls: { cert: ${cert}, key: ${key} }\n`);
    const cases: [ServerOptions, RegExp][] = [
      [{ configFile: tls('missing.pem', certs.key) }, /berth\.yaml: tls\.cert: cannot read \S+missing\.pem: no such file$/],
      [{ configFile: tls(garbage, certs.key) }, /berth\.yaml: tls\.cert: \S+garbage\.pem is not a PEM certificate$/],
      [{ configFile: tls(certs.cert, garbage) }, /berth\.yaml: tls\.key: \S+garbage\.pem is not a PEM private key/],
      [{ configFile: tls(certs.cert, certs.otherKey) }, /tls\.key: \S+other-ca\.key is not the private key of \S+server\.pem$/],
      [{ configFile: '/dev/null', tlsCert: certs.cert }, /^\/dev\/null: --tls-cert: needs its private key too: --tls-key$/],
      [{ configFile: '/dev/null', tlsCert: certs.cert, tlsKey: join(certs.dir, 'nokey') }, /^\/dev\/null: --tls-key: cannot read \S+nokey: no such file$/],
      [{ configFile: '/dev/null', tlsCert: certs.cert, tlsKey: certs.key, insecureHttp: true }, /^\/dev\/null: --insecure-http: is for a server without tls/],
      [
        { configFile: configFile(`tls: { cert: ${certs.cert}, key: ${certs.key} }\nfactories: { local: { kind: local, ca: nope.pem } }\n`) },
        /berth\.yaml: factories\.local\.ca: cannot read \S+nope\.pem: no such file$/,
      ],
    ]; // prettier-ignore
    for (const [opts, message] of cases) assert.match(await refusal(opts), message);
    // Through the CLI: one line, no stack.
    const sb = sandbox();
    try {
      const file = tls('missing.pem', certs.key);
      fails(
        await berth(sb, ['server', '--config', file, '--data-dir', tempDir(), '--listen', '127.0.0.1:0']),
        1,
        /^berth: invalid configuration: \S+berth\.yaml: tls\.cert: cannot read \S+missing\.pem: no such file\n$/,
      );
    } finally {
      sb.remove();
    }
  });

  it('warns when the certificate does not name the address agents are given', async () => {
    const lines = onlyOurs(
      await printed({
        configFile: configFile(
          `publicUrl: https://berth.invalid:7070\ntls: { cert: ${certs.cert}, key: ${certs.key} }\n`,
        ),
        listen: '127.0.0.1:0',
      }),
    );
    assert.match(lines[0] ?? '', /^berth \S+ listening on https:\/\/127\.0\.0\.1:\d+$/);
    assert.match(lines[1] ?? '', /^warning: tls\.cert: the certificate does not name berth\.invalid, /);
  });

  it("gives local and slurm factories' agents the server's certificate to trust, or their own ca", () => {
    const file = join(certs.dir, 'conf', 'berth.yaml');
    const config = resolveConfig(
      validateConfig({
        tls: { cert: '../server.pem', key: '../server.key' },
        factories: {
          local: { kind: 'local' },
          hpc: { kind: 'slurm', ca: 'ca.pem' },
          sim: { kind: 'simulated' },
        },
        targets: { local: { factory: 'local' } },
      }),
      {},
      file,
    );
    assert.equal(config.factories.local?.ca, certs.cert);
    assert.equal(config.factories.hpc?.ca, join(certs.dir, 'conf', 'ca.pem'));
    assert.equal(config.factories.sim?.ca, undefined);
    assert.throws(
      () => resolveConfig(validateConfig({ factories: { sim: { kind: 'simulated', ca: 'x.pem' } } }), {}),
      /factories\.sim\.ca: is for a local or slurm factory only/,
    );
  });
});
