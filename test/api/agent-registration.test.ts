/**
 * `POST /api/v1/agent/register`: an agent on another machine trades its worker's one-time
 * credential for the job's token. The credential registers that one worker once, and is nothing
 * else: not an API token, useless for another worker, refused once spent or once the job ended.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { hashToken, newToken } from '../../src/domain/tokens.js';
import { insertWorker } from '../../src/store/queries/workers.js';
import { berth, sandbox } from '../cli/cli.js';
import { storeOf } from '../helpers/db.js';
import { submit } from '../helpers/jobs.js';
import { call, useTestServer } from '../helpers/server.js';

const server = useTestServer({}, async () => {
  const s = server();
  const queue = { name: 'held', quota: { cpu: '100' }, stopPolicy: 'Hold' };
  assert.equal((await call(s.api, s.adminToken, 'POST', '/cluster-queues', queue)).status, 201);
  const project = { name: 'reg', clusterQueue: 'held' };
  assert.equal((await call(s.api, s.adminToken, 'POST', '/projects', project)).status, 201);
});

/** A queued job with a worker on record whose agent has `credential`. */
async function workerWithCredential(): Promise<{ jobId: number; workerId: number; credential: string }> {
  const s = server();
  const job = await submit(s.api, s.adminToken, 'reg', { command: ['true'] });
  const credential = newToken('agent');
  const workerId = await insertWorker(
    storeOf(s).db,
    { jobId: job.id, factory: 'local', target: 'local', registration: hashToken(credential) },
    Date.now(),
  );
  return { jobId: job.id, workerId, credential };
}

const register = (credential: string | undefined, workerId: number) =>
  call<{ jobId: number; workerId: number; token: string; error?: { message: string } }>(
    server().api,
    credential,
    'POST',
    '/agent/register',
    { workerId },
  );

describe('agent registration', () => {
  it("trades the credential once for the job's token", async () => {
    const { jobId, workerId, credential } = await workerWithCredential();
    const first = await register(credential, workerId);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.jobId, jobId);
    assert.equal(first.body.workerId, workerId);
    assert.match(first.body.token, /^berthj_/);
    const self = await call<{ id: number }>(server().api, first.body.token, 'GET', '/job/self');
    assert.equal(self.status, 200, self.text);
    assert.equal(self.body.id, jobId);

    const again = await register(credential, workerId);
    assert.equal(again.status, 401);
    assert.match(again.text, /cannot be registered with this credential/);
  });

  it('refuses a wrong credential, another worker, and no credential, saying the same', async () => {
    const a = await workerWithCredential();
    const b = await workerWithCredential();
    for (const [credential, workerId] of [
      [newToken('agent'), a.workerId],
      [a.credential, b.workerId],
      [a.credential, 999_999],
    ] as const) {
      const r = await register(credential, workerId);
      assert.equal(r.status, 401, r.text);
      assert.match(r.text, /cannot be registered with this credential/);
    }
    const none = await register(undefined, a.workerId);
    assert.equal(none.status, 401);
    assert.match(none.text, /missing credential/);
    // Still good for its own worker: the refusals spent nothing.
    assert.equal((await register(a.credential, a.workerId)).status, 200);
  });

  it('is no API token', async () => {
    const { credential } = await workerWithCredential();
    const r = await call(server().api, credential, 'GET', '/whoami');
    assert.equal(r.status, 401);
  });

  it('is refused once the job has ended', async () => {
    const { jobId, workerId, credential } = await workerWithCredential();
    const s = server();
    assert.equal((await call(s.api, s.adminToken, 'POST', `/jobs/${jobId}/cancel`)).status, 200);
    const r = await register(credential, workerId);
    assert.equal(r.status, 401, r.text);
  });

  it('answers 400 for a malformed body', async () => {
    const { credential } = await workerWithCredential();
    const r = await call(server().api, credential, 'POST', '/agent/register', { workerId: 'one' });
    assert.equal(r.status, 400, r.text);
  });
});

describe('berth agent on the command line', () => {
  const sb = sandbox();
  after(() => sb.remove());
  const agent = (args: string[], env: Record<string, string> = {}) => berth(sb, ['agent', ...args], { env });

  it('explains itself with --help, and needs --server and --worker', async () => {
    const help = await agent(['--help']);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /--server <url>/);
    assert.match(help.stdout, /--worker <id>/);
    const missing = await agent(['--worker', '1']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^berth: .*--server/);
  });

  it('without its credential: one line, exit 1', async () => {
    const r = await agent(['--server', server().url, '--worker', '1']);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      'berth: BERTH_AGENT_CREDENTIAL is not set: the factory that starts the agent passes it\n',
    );
  });

  it('with a credential the server refuses: one line naming the worker, exit 1', async () => {
    const { workerId } = await workerWithCredential();
    const r = await agent(['--server', server().url, '--worker', String(workerId)], {
      BERTH_AGENT_CREDENTIAL: newToken('agent'),
    });
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(`^berth: registering worker ${workerId}: worker ${workerId} cannot be registered`),
    );
    assert.equal(r.stderr.split('\n').filter(Boolean).length, 1, r.stderr);
  });
});
