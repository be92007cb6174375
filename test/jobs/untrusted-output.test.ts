/**
 * Nothing a job sends harms the installation, with real jobs on the local factory over real HTTP.
 * Job code holds its token and may call the agent protocol itself: a NUL in its output is kept
 * byte for byte, as is every byte value; a NUL in a finish message it sends is refused (400) and the server carries on —
 * other jobs run, and on PostgreSQL its leader keeps leading (the write used to fail in a way
 * taken for the database being down); its output is bounded per run (`logs.maxBytesPerJob`),
 * whether its agent uploads it or the job calls the upload route itself.
 */
import assert from 'node:assert/strict';
import { scratchDir } from '../helpers/scratch.js';
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { submit, waitDone } from '../helpers/jobs.js';
import { call, localFactoryConfig, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let scratch: string;

const LIMIT = 4096;
const NOTICE =
  'berth: log limit of 4 KiB reached; further output of this run is dropped (logs.maxBytesPerJob)\n';

before(async () => {
  scratch = scratchDir('berth-untrusted-');
  s = await startTestServer({ config: [localFactoryConfig(4), 'logs:', '  maxBytesPerJob: 4Ki'].join('\n') });
});
after(async () => {
  await s.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** A job's log as raw bytes (not decoded as text), all of it or one attempt's. */
async function logBytes(id: number, query = ''): Promise<Buffer> {
  const res = await fetch(`${s.api}/jobs/${id}/logs${query}`, {
    headers: { authorization: `Bearer ${s.adminToken}` },
  });
  assert.equal(res.status, 200);
  return Buffer.from(await res.arrayBuffer());
}

interface Health {
  role: string;
  term: number;
}
const health = async (): Promise<Health> => (await call<Health>(s.api, undefined, 'GET', '/health')).body;

/** Runs `script` as a job to its end; returns the job. */
async function run(script: string, extra: Record<string, unknown> = {}) {
  const job = await submit(s.api, s.adminToken, 'default', { script, ...extra });
  return waitDone(s.api, s.adminToken, job.id);
}

/** A shell command that calls the API as the job itself (curl), printing the HTTP status. */
const asJob = (method: string, path: string, contentType: string, data: string) =>
  `curl -s -o /dev/null -w '%{http_code}' -X ${method} -H "Authorization: Bearer $BERTH_TOKEN" -H 'content-type: ${contentType}' ${data} "$BERTH_URL/api/v1${path}"`;

describe('what a job sends', () => {
  it('output with NUL bytes is kept and served exactly as written', async () => {
    const job = await run(`printf 'a\\0b\\n'; printf '\\0\\0 end\\n'`);
    assert.equal(job.state, 'succeeded');
    const expected = Buffer.from('a\u0000b\n\u0000\u0000 end\n', 'utf8');
    assert.deepEqual(await logBytes(job.id), expected);
    assert.deepEqual(await logBytes(job.id, '?attempt=1'), expected);
  });

  it('output of every byte value, not UTF-8, is kept and served as written (none decoded on the way)', async () => {
    // 0xff 0xfe alone: decoding would give two U+FFFD (ef bf bd ef bf bd), the bug this guards.
    const every = Buffer.concat([
      Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
      Buffer.from([0xff, 0xfe]),
    ]);
    const file = join(scratch, 'every-byte');
    writeFileSync(file, every);
    chmodSync(file, 0o644); // the server in this process set its umask to 077
    const job = await run(`cat ${file}; cat ${file} >&2`);
    assert.equal(job.state, 'succeeded');
    assert.deepEqual(await logBytes(job.id), Buffer.concat([every, every]));
  });

  it('a finish message with a NUL, sent by the job itself, is refused with 400; the server stays well', async () => {
    const before = await health();
    const finish = asJob(
      'POST',
      '/job/self/finish',
      'application/json',
      `--data '{"outcome":"exited","exitCode":3,"signal":null,"message":"bad\\u0000x"}'`,
    );
    const job = await run(`echo "finish $(${finish})"`);
    assert.equal(job.state, 'succeeded', 'its agent reported the real end');
    assert.equal((await logBytes(job.id)).toString(), 'finish 400\n');
    // The store took no harm: the leader leads in the same term, and another job runs.
    assert.deepEqual(await health(), before);
    const next = await run('echo still here');
    assert.equal(next.state, 'succeeded');
    assert.equal((await logBytes(next.id)).toString(), 'still here\n');
    assert.deepEqual(await health(), before);
  });
});

describe('the log limit per run (logs.maxBytesPerJob: 4Ki)', () => {
  it("keeps a run's first 4 KiB, then one line says the rest is dropped; each attempt has its own", async () => {
    const job = await run(
      `head -c 5000 /dev/zero | tr '\\0' x; echo; echo never seen; echo never seen either >&2; exit 1`,
      { retries: 1, retryBackoffSeconds: 0 },
    );
    assert.equal(job.state, 'failed');
    const attempt = `${'x'.repeat(LIMIT)}\n${NOTICE}`;
    assert.equal((await logBytes(job.id, '?attempt=1')).toString(), attempt);
    assert.equal((await logBytes(job.id, '?attempt=2')).toString(), attempt);
    assert.equal((await logBytes(job.id)).toString(), attempt + attempt);
  });

  it('holds at the server: a job that uploads output itself gets 204 and its log stops at the limit', async () => {
    const codes = join(scratch, 'codes');
    const upload = asJob('POST', '/job/self/logs', 'text/plain', '--data-binary @-');
    const job = await run(
      `for i in 1 2 3; do head -c 3000 /dev/zero | tr '\\0' y | ${upload} >> ${codes}; echo >> ${codes}; done`,
    );
    assert.equal(job.state, 'succeeded');
    assert.equal(readFileSync(codes, 'utf8'), '204\n204\n204\n');
    assert.equal((await logBytes(job.id)).toString(), `${'y'.repeat(LIMIT)}\n${NOTICE}`);
  });
});
