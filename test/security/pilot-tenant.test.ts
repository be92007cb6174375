/**
 * A hostile tenant on a pilot (docs/SECURITY.md, "Slurm"), on the real Slurm cluster of
 * scripts/slurm: a job of project `teama` on a pilot target asks, with its own token, for the
 * pilot's next job as the agent does — and is refused; a job of project `teamb` then never runs on
 * teama's pilot, which serves its first job's project alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';
import { twoTenants } from './tenants.js';

const CONFIG = [
  'graceSeconds: 2',
  'heartbeatSeconds: 120',
  'defaultTarget: pilot',
  'factories:',
  '  pilots: { kind: slurm, partition: main, capacity: 1, timeLimit: 2m, pollSeconds: 0.5 }',
  'targets:',
  '  pilot: { factory: pilots, reuse: true, idleTimeout: 20s, defaultTimeout: 30s }',
].join('\n');

/** What the job's code sends: its own finish, asking for the next job as a pilot's agent does. */
const STEAL = [
  'code=$(curl -s -o "$BERTH_WORKDIR/next.json" -w "%{http_code}" -X POST',
  '-H "Authorization: Bearer $BERTH_TOKEN" -H "content-type: application/json"',
  `-d '{"outcome":"exited","exitCode":0,"signal":null}'`,
  '"$BERTH_URL/api/v1/job/self/finish?next=5")',
  '; echo "NEXT $code"; cat "$BERTH_WORKDIR/next.json"; echo',
].join(' ');

describe('a hostile tenant on a pilot worker', { skip: slurmSkip() }, () => {
  let s: TestServer;
  const tokens: Record<string, string> = {};
  before(async () => {
    Object.assign(process.env, (await startSlurm()).env);
    s = await startTestServer({ config: CONFIG });
    Object.assign(tokens, await twoTenants(s));
  });
  after(() => s?.close());

  const log = async (token: string, id: number) => (await call(s.api, token, 'GET', `/jobs/${id}/logs`)).text;
  const reused = async (token: string, id: number) =>
    (await events(s.api, token, id)).some((e) => e.type === 'worker-reused');

  it("cannot take the pilot's next job with its own token, and another project's job never runs on its pilot", async () => {
    const a1 = await submit(s.api, tokens.alice!, 'teama', { script: STEAL });
    const a1Done = await waitDone(s.api, tokens.alice!, a1.id, 60_000);
    assert.equal(a1Done.state, 'succeeded', a1Done.reason);
    const out = await log(tokens.alice!, a1.id);
    assert.match(out, /^NEXT 401$/m, out);
    assert.match(out, /worker credential/, out);

    // The same project's next job runs on the pilot: it is still there, and works.
    const a2 = await submit(s.api, tokens.alice!, 'teama', { command: ['true'] });
    const a2Done = await waitDone(s.api, tokens.alice!, a2.id, 60_000);
    assert.equal(a2Done.state, 'succeeded', a2Done.reason);
    assert.equal(await reused(tokens.alice!, a2.id), true, "teama's second job ran on its pilot");
    assert.equal(a2Done.worker?.id, a1Done.worker?.id);

    // Another project's job waits for a worker of its own: the idle pilot is retired for it.
    const b1 = await submit(s.api, tokens.bob!, 'teamb', { command: ['true'] });
    const b1Done = await waitDone(s.api, tokens.bob!, b1.id, 60_000);
    assert.equal(b1Done.state, 'succeeded', b1Done.reason);
    assert.equal(await reused(tokens.bob!, b1.id), false, "teamb's job never ran on teama's pilot");
    assert.notEqual(b1Done.worker?.id, a1Done.worker?.id);
    assert.equal((await getJob(s.api, tokens.alice!, a1.id)).worker?.id, a1Done.worker?.id);
  });
});
