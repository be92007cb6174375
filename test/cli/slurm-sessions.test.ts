/**
 * `berth exec`, `port-forward`, `run -i` and `attach` on Slurm (issue #42), on the real cluster of
 * scripts/slurm: each node's `berth agent` dials a channel to the server with the credential its
 * registration gave (agent/agent-channel.ts), and the sessions reach the job through it — inside
 * its namespaces, as its uid — on a worker of its own and on a pilot, where a person's trial in a
 * real terminal (tmux) goes as on the local factory (terminal.ts). A job's own token opens no
 * channel (its code holds that token); a job that has ended is refused in one line.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { call } from '../helpers/server.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';
import { waitFor } from '../helpers/wait.js';
import { berth, useCliServer } from './cli.js';
import { forwarded, servesAll } from './forwarding.js';
import { hasTmux, terminalTrial } from './terminal.js';

const support = probeSandbox();
const skip = slurmSkip() || (support.available ? false : `jobs run without namespaces here: ${support.why}`);

describe('sessions in jobs on Slurm', { skip }, () => {
  before(async () => {
    Object.assign(process.env, (await startSlurm()).env);
  });
  const cli = useCliServer(undefined, {
    config: [
      'graceSeconds: 2',
      'heartbeatSeconds: 120',
      'defaultTarget: hpc',
      'factories:',
      '  hpc: { kind: slurm, partition: main, capacity: 3, timeLimit: 5m, pollSeconds: 0.5 }',
      'targets:',
      '  hpc: { factory: hpc, defaultTimeout: 4m }',
      '  pilot: { factory: hpc, reuse: true, idleTimeout: 20s, defaultTimeout: 2m }',
    ].join('\n'),
  });
  const api = () => cli.server.api;
  const token = () => cli.server.adminToken;
  const runningJob = async (body: Record<string, unknown>) => {
    const j = await submit(api(), token(), 'default', body);
    await waitFor(
      `job ${j.id} to run`,
      async () => (await getJob(api(), token(), j.id)).state === 'running',
      60_000,
    );
    return j.id;
  };

  it("runs a command inside a Slurm job — its /tmp, its uid, its processes — and exits with the command's status; -i sends input", async () => {
    const id = await runningJob({ script: 'echo only-in-this-job > /tmp/mine; exec sleep 300' });
    const r = await cli.admin([
      'exec',
      String(id),
      '--',
      'sh',
      '-c',
      'id -u; cat /tmp/mine; for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done; exit 5',
    ]);
    assert.equal(r.code, 5, r.stderr);
    const lines = r.stdout.split('\n');
    assert.ok(Number(lines[0]) >= 1000, `as the job's uid, not root: ${lines[0]}`);
    assert.equal(lines[1], 'only-in-this-job', "the job's own /tmp");
    assert.match(r.stdout, /sleep 300/, "the job's process is in view");
    assert.doesNotMatch(r.stdout, /slurmd|berth agent/, "nothing outside the job's pid namespace is");
    const piped = await berth(cli.sb, ['exec', '-i', String(id), '--', 'wc', '-c'], {
      env: cli.connection(),
      input: 'twelve bytes',
    });
    assert.equal(piped.code, 0, piped.stderr);
    assert.equal(piped.stdout.trim(), '12');
    await call(api(), token(), 'POST', `/jobs/${id}/cancel`);
    await waitDone(api(), token(), id, 60_000);
    const ended = await cli.admin(['exec', String(id), '--', 'true']);
    assert.equal(ended.code, 1);
    assert.match(ended.stderr, /is not running/);
  });

  it('forwards a local port to a server inside a Slurm job', async () => {
    const id = await runningJob({
      script: 'echo "inside the slurm job" > page.txt; exec python3 -m http.server 18941 --bind 127.0.0.1',
    });
    const { forward, get } = await forwarded(cli.sb, id, 18941, cli.connection());
    await servesAll(get, 'inside the slurm job\n', 8);
    forward.signal('SIGINT');
    await forward.exit;
    await call(api(), token(), 'POST', `/jobs/${id}/cancel`);
  });

  it('runs an interactive job on Slurm (berth run -i), its exit code as berth’s own, on a worker of its own and on a pilot', async () => {
    for (const target of ['hpc', 'pilot']) {
      const r = await berth(cli.sb, ['run', '-i', '--target', target, '--', 'sh'], {
        env: cli.connection(),
        input: 'echo "on $(hostname) as $(id -u): $((6 * 7))"\nexit 4\n',
      });
      assert.equal(r.code, 4, `${target}: ${r.stderr}`);
      assert.match(r.stdout, /as \d{4,}: 42\r?$/m, target);
    }
  });

  it(
    "gives a shell on a Slurm pilot a terminal (tmux): the prompt, a resize, ^C, a killed client's shell taken back by attach, exit 7",
    { skip: hasTmux ? false : 'tmux is not installed (apt-get install tmux)' },
    () => terminalTrial(cli, '--target pilot '),
  );

  it("opens no channel with a job's own token, nor with a made-up credential", async () => {
    const id = await runningJob({
      script: 'echo "token=$BERTH_TOKEN worker=$BERTH_WORKER_ID"; exec sleep 300',
    });
    const said = await waitFor(
      'the job to say its token',
      async () =>
        /token=(\S+) worker=(\d+)/.exec((await call(api(), token(), 'GET', `/jobs/${id}/logs`)).text) ??
        undefined,
    );
    const [, jobToken, worker] = said;
    const dial = (bearer: string, workerId: string) =>
      new Promise<number>((resolve, reject) => {
        const url = `${cli.server.url.replace(/^http/, 'ws')}/api/v1/agent/channel?workerId=${workerId}`;
        const ws = new WebSocket(url, { headers: { authorization: `Bearer ${bearer}` } });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('open', () => {
          ws.close();
          reject(new Error('the channel opened'));
        });
        ws.once('error', reject);
      });
    assert.equal(await dial(jobToken!, worker!), 401, "the job's token");
    assert.equal(await dial(`chan_${'A'.repeat(43)}`, worker!), 401, 'a made-up credential');
    await call(api(), token(), 'POST', `/jobs/${id}/cancel`);
  });
});
