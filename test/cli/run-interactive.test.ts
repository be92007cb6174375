/**
 * `berth run -it` and `berth attach` end to end (issue #42), as a person uses them: the real CLI
 * in a real terminal (tmux: send-keys, capture-pane), a real server's local factory, the job's
 * shell on a terminal the agent holds. The prompt comes; `stty size` follows a resize; ^C stops a
 * `sleep` and not the shell; a killed client leaves the job running and `berth attach` takes the
 * same shell back; `exit 7` makes berth exit 7. With short bounds, an idle terminal ends its job
 * saying so, as does one nobody attaches to. And a terminal held by the agent reaches no other job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { call } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { twoTenants } from '../security/tenants.js';
import { berth, useCliServer } from './cli.js';
import { hasTmux, newestJob, Terminal, terminalTrial } from './terminal.js';

const support = probeSandbox();
const skip = !support.available
  ? `jobs run without namespaces here: ${support.why}`
  : !hasTmux
    ? 'tmux is not installed (apt-get install tmux)'
    : false;

const config = (idle: string, grace: string) =>
  [
    `interactive: { idleTimeout: ${idle}, detachGrace: ${grace} }`,
    'graceSeconds: 2',
    'factories:',
    '  local: { kind: local, capacity: 4 }',
    'targets:',
    '  local: { factory: local, defaultTimeout: 10m }',
    '  untimed: { factory: local }',
  ].join('\n');

describe('berth run -it, berth attach', { skip }, () => {
  const cli = useCliServer(undefined, { config: config('10m', '10m') });

  it("gives a shell a terminal: the prompt, its size and a resize, ^C, then a killed client's shell taken back by attach, and exit 7 as berth's own", () =>
    terminalTrial(cli));

  it('takes input from a pipe with -i, and exits with the last command of its shell', async () => {
    const r = await berth(cli.sb, ['run', '-i', '--', 'sh'], {
      env: cli.connection(),
      input: 'echo "piped $((2 + 3))"\nexit 3\n',
    });
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stdout, /piped 5\r?$/m);
  });

  it('refuses, in one line, an interactive job without a time limit, and attach to a batch job', async () => {
    const untimed = await cli.admin(['run', '-i', '--target', 'untimed', '--', 'sh']);
    assert.equal(untimed.code, 1);
    assert.match(untimed.stderr, /^berth: interactive: an interactive job needs a time limit.*--timeout/);
    const batch = await submit(cli.server.api, cli.server.adminToken, 'default', {
      script: 'exec sleep 300',
    });
    await waitFor(
      'the batch job to run',
      async () => (await getJob(cli.server.api, cli.server.adminToken, batch.id)).state === 'running',
    );
    const attach = await cli.admin(['attach', String(batch.id)]);
    assert.equal(attach.code, 1);
    assert.match(attach.stderr, /^berth: job \d+ is not interactive: it has no terminal to attach to/);
    await cli.request('POST', `/jobs/${batch.id}/cancel`);
    assert.equal((await waitDone(cli.server.api, cli.server.adminToken, batch.id)).state, 'cancelled');
  });

  it("keeps the terminal from every other job: another tenant's job started meanwhile holds no descriptor of it", async () => {
    const tenants = await twoTenants(cli.server);
    const t = new Terminal(cli, 'run -it --project teama -- sh', tenants.alice);
    try {
      await t.shows(/\$ $/m);
      // bob's job, started while alice's terminal is open: every descriptor it was started with.
      const probe = await submit(cli.server.api, tenants.bob, 'teamb', {
        script: 'for f in /proc/self/fd/*; do echo "$f -> $(readlink "$f")"; done',
      });
      const done = await waitDone(cli.server.api, tenants.bob, probe.id);
      assert.equal(done.state, 'succeeded', done.reason);
      const fds = (await call(cli.server.api, tenants.bob, 'GET', `/jobs/${probe.id}/logs`)).text;
      assert.match(fds, /\/proc\/self\/fd\/0 -> /, `the probe lists its descriptors: ${fds}`);
      assert.doesNotMatch(fds, /ptmx|\/dev\/pts\//, `a terminal's descriptor reached another job:\n${fds}`);
      t.type('exit 0');
      await t.shows(/^EXIT=0$/m);
    } finally {
      t.close();
    }
  });
});

describe('interactive jobs end when nobody is there', { skip }, () => {
  // The grace shorter than the idle time: a killed client's job ends by the first.
  const cli = useCliServer(undefined, { config: config('6s', '3s') });

  it('ends an idle terminal, warning first, then saying why on it and in the job', async () => {
    const t = new Terminal(cli, 'run -it -- sh');
    try {
      await t.shows(/\$ $/m);
      await t.shows(/\[berth\] idle for \d+s: this job ends in \d+s unless there is input or output/, 30_000);
      await t.shows(
        /\[berth\] no input or output for 6s \(interactive\.idleTimeout\): this job ends now/,
        30_000,
      );
      await t.shows(/^EXIT=\d+$/m);
      const done = await waitDone(cli.server.api, cli.server.adminToken, await newestJob(cli));
      assert.equal(done.state, 'cancelled');
      assert.match(done.reason, /no input or output for 6s \(interactive\.idleTimeout\)/);
    } finally {
      t.close();
    }
  });

  it('ends a job no terminal is attached to for the grace, and says so', async () => {
    const t = new Terminal(cli, 'run -it -- sh');
    try {
      await t.shows(/\$ $/m);
      t.type('echo typed');
      const id = await newestJob(cli);
      t.killClient();
      const done = await waitDone(cli.server.api, cli.server.adminToken, id);
      assert.equal(done.state, 'cancelled');
      assert.match(done.reason, /no terminal attached for 3s \(interactive\.detachGrace\)/);
    } finally {
      t.close();
    }
  });
});
