/**
 * `berth exec` end to end (issue #42), on a real server's local factory with real processes: the
 * command runs inside the running job — its processes and only them, its /tmp, its uid, its
 * working directory and environment — and `berth` exits with its status; its input with `-i`.
 * Who may: the job's submitter and the project's owners; another project's member, a viewer, a
 * member who did not submit it and a job's own token are refused, and each refusal is in the
 * audit log. The protocol under attack is test/api/exec-protocol.test.ts's (on every store).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { call } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { twoTenants } from '../security/tenants.js';
import { berth, startBerth, useCliServer } from './cli.js';
import { forwarded, servesAll } from './forwarding.js';

const support = probeSandbox();
const skip = support.available ? false : `jobs run without namespaces here: ${support.why}`;

describe('berth exec', { skip }, () => {
  const cli = useCliServer(undefined, {
    config: [
      'graceSeconds: 1',
      'factories:',
      '  local: { kind: local, capacity: 4 }',
      '  offline: { kind: local, capacity: 1, network: none }',
      'targets:',
      '  local: { factory: local }',
      '  offline: { factory: offline }',
    ].join('\n'),
  });
  const tokens: Record<string, string> = {};
  let job: number;
  let other: number;

  before(async () => {
    Object.assign(tokens, await twoTenants(cli.server));
    for (const [name, role] of [
      ['carol', 'viewer'],
      ['dave', 'member'],
      ['erin', 'owner'],
    ] as const) {
      tokens[name] = (await cli.request<{ token: string }>('POST', '/users', { name })).token;
      await cli.request('PUT', `/projects/teama/members/${name}`, { role });
    }
    // alice's job, waiting, with a file in its private /tmp; and bob's, in another project.
    job = (
      await submit(cli.server.api, tokens.alice!, 'teama', {
        script: 'echo secret-of-a > /tmp/mine; exec sleep 3000',
      })
    ).id;
    other = (await submit(cli.server.api, tokens.bob!, 'teamb', { script: 'exec sleep 3001' })).id;
    for (const [id, token] of [
      [job, tokens.alice!],
      [other, tokens.bob!],
    ] as const)
      await waitFor(
        `job ${id} to run`,
        async () => (await getJob(cli.server.api, token, id)).state === 'running',
      );
  });

  it("runs inside the job — its processes only, its /tmp, uid, directory and environment — and exits with the command's status", async () => {
    const r = await cli.as(tokens.alice!)([
      'exec',
      String(job),
      '--',
      'sh',
      '-c',
      // In the job's pid namespace: its own pid is one the job's /proc shows.
      'id -u; cat /tmp/mine; pwd; echo "job $BERTH_JOB_ID"; test -d /proc/$$ && echo "pid $$ in view"; for p in /proc/[0-9]*; do cat $p/cmdline | tr "\\0" " "; echo; done; exit 7',
    ]);
    assert.equal(r.code, 7, r.stderr);
    const lines = r.stdout.split('\n');
    assert.ok(Number(lines[0]) >= 1000, `as the job's uid, not root: ${lines[0]}`);
    assert.equal(lines[1], 'secret-of-a', "the job's own /tmp");
    assert.match(lines[2] ?? '', /workers\/\d+$/, "the job's working directory");
    assert.equal(lines[3], `job ${job}`);
    assert.match(lines[4] ?? '', /^pid \d+ in view$/, "in the job's pid namespace");
    assert.match(r.stdout, /sleep 3000/, "the job's own process is in view");
    assert.doesNotMatch(r.stdout, /sleep 3001/, "another job's is not");
  });

  it('sends its input with -i, and reports a command that cannot run', async () => {
    const piped = await berth(cli.sb, ['exec', '-i', String(job), '--', 'wc', '-c'], {
      env: cli.connection(tokens.alice),
      input: 'twelve bytes',
    });
    assert.equal(piped.code, 0, piped.stderr);
    assert.equal(piped.stdout.trim(), '12');
    const missing = await cli.as(tokens.alice!)(['exec', String(job), '--', '/no/such/program']);
    assert.equal(missing.code, 127, missing.stderr);
    assert.match(missing.stderr, /no\/such\/program/);
  });

  it("is for the job's submitter and the project's owners alone; every refusal is audited", async () => {
    const tryAs = (name: string) => cli.as(tokens[name]!)(['exec', String(job), '--', 'true']);
    assert.equal((await tryAs('erin')).code, 0, 'an owner of the project may');
    for (const [name, status] of [
      ['bob', /not found/],
      ['carol', /submitter \(alice\) and the project's owners; you are a viewer/],
      ['dave', /you are a member/],
    ] as const) {
      const r = await tryAs(name);
      assert.equal(r.code, 1, `${name}: ${r.stdout}`);
      assert.match(r.stderr, status, name);
      assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    }
    // The job's own token: its code must not run commands in itself or its project's other jobs.
    // Asked twice: as an upgrade (an attempt: audited), and as a plain GET (how the dashboard
    // learns why its upgrade was refused: answered alike, no second row for one attempt).
    const own = await submit(cli.server.api, tokens.alice!, 'teama', {
      script: [
        'url="$BERTH_URL/api/v1/jobs/$BERTH_JOB_ID/exec?command=true"',
        'curl -s --http1.1 -H "Authorization: Bearer $BERTH_TOKEN" -H "Connection: Upgrade" -H "Upgrade: websocket" \\',
        '  -H "Sec-WebSocket-Version: 13" -H "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==" "$url"',
        'echo',
        'curl -s -H "Authorization: Bearer $BERTH_TOKEN" "$url"',
      ].join('\n'),
    });
    const done = await waitDone(cli.server.api, tokens.alice!, own.id);
    const log = (await call(cli.server.api, tokens.alice, 'GET', `/jobs/${own.id}/logs`)).text;
    assert.equal(done.state, 'succeeded', done.reason);
    assert.equal(log.match(/person's token only/g)?.length, 2, log);

    const audit = await cli.request<{ action: string; actor: string; detail: Record<string, unknown> }[]>(
      'GET',
      '/audit?limit=50',
    );
    const rows = audit.filter((a) => a.action.startsWith('job.exec'));
    const seen = rows.map((a) => `${a.action} ${a.actor}`);
    for (const expected of [
      'job.exec erin',
      'job.exec-refused carol',
      'job.exec-refused dave',
      `job.exec-refused job ${own.id}`,
    ])
      assert.ok(seen.includes(expected), `${expected} in ${seen.join(', ')}`);
    assert.ok(!seen.some((s) => s.endsWith(' bob')), 'who cannot see the job leaves no row about it');
    assert.equal(seen.filter((s) => s === `job.exec-refused job ${own.id}`).length, 1, seen.join(', '));
    const erin = rows.find((a) => a.actor === 'erin')!;
    assert.deepEqual(erin.detail, { rank: 0, program: 'true', args: 0 }, 'the program, never its arguments');
  });

  it('refuses a job that does not run (409), and one it cannot see (404)', async () => {
    const r = await cli.as(tokens.bob!)(['exec', '999999', '--', 'true']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /job 999999 not found/);
    const ended = await submit(cli.server.api, tokens.alice!, 'teama', { command: ['true'] });
    await waitDone(cli.server.api, tokens.alice!, ended.id);
    const q = await cli.as(tokens.alice!)(['exec', String(ended.id), '--', 'true']);
    assert.equal(q.code, 1);
    assert.match(q.stderr, new RegExp(`job ${ended.id} is not running`));
  });

  it('port-forward: a local port reaches a server inside the job, 20 connections at once; nothing listening is said', async () => {
    // A web server in the job's network namespace (its loopback), serving the job's directory.
    const web = await submit(cli.server.api, tokens.alice!, 'teama', {
      script: 'echo "inside the job" > page.txt; exec python3 -m http.server 18931 --bind 127.0.0.1',
    });
    await waitFor(
      'the job to run',
      async () => (await getJob(cli.server.api, tokens.alice!, web.id)).state === 'running',
    );
    const { forward, get } = await forwarded(cli.sb, web.id, 18931, cli.connection(tokens.alice));
    await servesAll(get, 'inside the job\n', 20);

    // A port nothing listens on: the connection is closed, and berth says why.
    const none = startBerth(cli.sb, ['port-forward', String(web.id), '0:18932'], {
      env: cli.connection(tokens.alice),
    });
    await none.shows('stdout', '(^C to stop)');
    const nonePort = /127\.0\.0\.1:(\d+)/.exec(none.out().stdout)?.[1];
    await assert.rejects(fetch(`http://127.0.0.1:${nonePort}/`));
    await none.shows('stderr', 'nothing listens on port 18932 in the job');
    // A viewer may not.
    const carol = startBerth(cli.sb, ['port-forward', String(web.id), '0:18931'], {
      env: cli.connection(tokens.carol),
    });
    await carol.shows('stdout', '(^C to stop)');
    const carolPort = /127\.0\.0\.1:(\d+)/.exec(carol.out().stdout)?.[1];
    await assert.rejects(fetch(`http://127.0.0.1:${carolPort}/page.txt`));
    await carol.shows('stderr', 'you are a viewer');
    for (const b of [forward, none, carol]) b.signal('SIGINT');
    await call(cli.server.api, tokens.alice, 'POST', `/jobs/${web.id}/cancel`);
  });

  it('port-forward reaches a job with a network of its own (network: none), which nothing else on the machine can', async () => {
    const web = await submit(cli.server.api, tokens.alice!, 'teama', {
      target: 'offline',
      script: 'echo "offline page" > page.txt; exec python3 -m http.server 18933 --bind 127.0.0.1',
    });
    await waitFor(
      'the job to run',
      async () => (await getJob(cli.server.api, tokens.alice!, web.id)).state === 'running',
    );
    const forward = startBerth(cli.sb, ['port-forward', String(web.id), '0:18933'], {
      env: cli.connection(tokens.alice),
    });
    await forward.shows('stdout', '(^C to stop)');
    const port = /127\.0\.0\.1:(\d+)/.exec(forward.out().stdout)?.[1];
    const page = await waitFor('the page through the forward', async () => {
      const r = await fetch(`http://127.0.0.1:${port}/page.txt`).catch(() => undefined);
      return r?.status === 200 ? r.text() : undefined;
    });
    assert.equal(page, 'offline page\n');
    // The host's own loopback does not reach it: it listens in the job's namespace alone.
    await assert.rejects(fetch('http://127.0.0.1:18933/page.txt'));
    forward.signal('SIGINT');
    await call(cli.server.api, tokens.alice, 'POST', `/jobs/${web.id}/cancel`);
  });
});
