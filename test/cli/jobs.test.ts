/**
 * The job commands against a real server running real jobs, as a user sees them (stdout, stderr,
 * exit code): `berth submit`, `jobs`, `status`, `logs` and `cancel`. Jobs that must stay running
 * for a while wait for a gate file the test creates; nothing waits for a fixed time.
 */
import assert from 'node:assert/strict';
import { countedRuns } from '../helpers/scratch.js';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getJob, submit, waitDone, type JobView } from '../helpers/jobs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import {
  allFail,
  fails,
  keyValues,
  ok,
  parseJson,
  row,
  rows,
  startBerth,
  useCliServer,
  SUITE_TIMEOUT_MS,
} from './cli.js';

interface JobJson extends JobView {
  name: string;
  project: string;
  command: string[];
  env: Record<string, string>;
  requests: Record<string, string>;
  priority: number;
  timeoutSeconds: number | null;
  dependsOn: number[];
  timeline?: { type: string; message: string; at: string }[];
}

const ctx = useCliServer(
  async ({ request }) => {
    await request('POST', '/cluster-queues', { name: 'one-at-a-time', quota: { jobs: 1 } });
    await request('POST', '/projects', { name: 'solo', clusterQueue: 'one-at-a-time' });
    await request('POST', '/projects', { name: 'listing', clusterQueue: 'default' });
  },
  { config: localFactoryConfig() },
);
const { admin: cli } = ctx;

const job = (id: number) => getJob(ctx.server.api, ctx.server.adminToken, id);
const finished = (id: number) => waitDone(ctx.server.api, ctx.server.adminToken, id);

/** The id in `submitted job 12 (queued: …)`. */
function submittedId(out: string): number {
  const m = /^submitted job (\d+) \([a-z]+: [^\n]+\)$/m.exec(out);
  assert.ok(m, `no "submitted job" line in ${JSON.stringify(out)}`);
  return Number(m[1]);
}

let gates = 0;
/** A job script that runs `first`, waits until the test opens the gate, then runs `then`. */
function gated(first = 'true', then = 'true') {
  const path = join(ctx.sb.root, `gate-${++gates}`);
  return {
    script: `${first}; while [ ! -e ${path} ]; do sleep 0.05; done; ${then}`,
    open: () => writeFileSync(path, ''),
  };
}

/** `berth ARGS…` as the admin, left running, its output readable while it runs. */
const start = (args: string[]) => startBerth(ctx.sb, args, { env: ctx.connection() });

/** The TYPE column of the timeline that `berth status` prints. */
function timelineTypes(out: string): string[] {
  const lines = out.trimEnd().split('\n');
  const header = lines.findIndex((l) => /^ {2}TIME +TYPE +MESSAGE$/.test(l));
  assert.ok(header >= 0, `no timeline in:\n${out}`);
  return lines.slice(header + 1).map((l) => l.trim().split(/ {2,}/)[1] ?? '');
}

describe('berth submit', { timeout: SUITE_TIMEOUT_MS }, () => {
  let failedId: number;

  it('--follow prints the output and exits with the exit code; berth jobs shows the failure', async () => {
    const r = await cli(['submit', '--follow', '--', 'sh', '-c', 'echo hello; exit 3']);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout, 'hello\n');
    failedId = submittedId(r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        // What the scheduler decided: queued, or already on its way.
        `^submitted job ${failedId} \\((queued|admitted|running|failed): [^\\n]+\\)\\njob ${failedId} failed \\(exited with code 3\\)\\n$`,
      ),
    );
    const listed = row(ok(await cli(['jobs'])), 'ID', String(failedId));
    assert.deepEqual(
      { NAME: listed.NAME, STATE: listed.STATE, EXIT: listed.EXIT, REASON: listed.REASON },
      { NAME: 'sh', STATE: 'failed', EXIT: '3', REASON: 'exited with code 3' },
    );
    assert.match(listed.AGE ?? '', /^\d+[smhd]$/);
    assert.match(listed.DURATION ?? '', /^\d+[smhd](\d+[smh])?$/);
  });

  it('without --wait or --follow prints the new job id and state, and returns at once', async () => {
    const out = ok(await cli(['submit', '--', 'sh', '-c', 'exit 0']));
    assert.match(out, /^submitted job \d+ \((queued|admitted|running|succeeded): [^\n]+\)\n$/);
    const id = submittedId(out);
    assert.equal((await finished(id)).exitCode, 0);
  });

  it('--wait prints the final state and exits with the exit code', async () => {
    const failing = await cli(['submit', '--wait', '--', 'sh', '-c', 'exit 7']);
    assert.equal(failing.code, 7, failing.stderr);
    assert.equal(failing.stderr, '');
    const id = submittedId(failing.stdout);
    assert.match(failing.stdout, new RegExp(`\\njob ${id} failed \\(exited with code 7\\)\\n$`));
    const passing = ok(await cli(['submit', '--wait', '--', 'true']));
    assert.match(
      passing,
      new RegExp(`\\njob ${submittedId(passing)} succeeded \\(exited with code 0\\)\\n$`),
    );
  });

  it('-o json prints the job with every flag sent; with --wait the finished job', async () => {
    const dep = await submit(ctx.server.api, ctx.server.adminToken, 'default', { command: ['true'] });
    const j = parseJson<JobJson>(
      await cli([
        'submit',
        '-o',
        'json',
        '--name',
        'json-job',
        '--priority',
        '-5',
        '--request',
        'cpu=500m,memory=64Mi',
        '--timeout',
        '1h30m',
        '--after',
        String(dep.id),
        '--env',
        'A=1',
        '--',
        'true',
      ]),
    );
    assert.deepEqual(
      {
        name: j.name,
        project: j.project,
        command: j.command,
        priority: j.priority,
        requests: j.requests,
        timeoutSeconds: j.timeoutSeconds,
        dependsOn: j.dependsOn,
        env: j.env,
      },
      {
        name: 'json-job',
        project: 'default',
        command: ['true'],
        priority: -5,
        requests: { cpu: '500m', memory: '64Mi' },
        timeoutSeconds: 5400,
        dependsOn: [dep.id],
        env: { A: '1' },
      },
    );
    const waited = await cli(['submit', '--wait', '-o', 'json', '--', 'sh', '-c', 'exit 5']);
    assert.equal(waited.code, 5, waited.stderr);
    const done = JSON.parse(waited.stdout) as JobJson;
    assert.deepEqual([done.state, done.exitCode], ['failed', 5]);
    const followed = await cli(['submit', '--follow', '-o', 'json', '--', 'echo', 'to stderr']);
    assert.equal(followed.code, 0);
    assert.equal(followed.stderr, 'to stderr\n');
    assert.equal((JSON.parse(followed.stdout) as JobJson).state, 'succeeded');
    await finished(j.id);
  });

  it('returns the same job for the same --idempotency-key', async () => {
    const first = parseJson<JobJson>(
      await cli(['submit', '-o', 'json', '--idempotency-key', 'nightly-1', '--', 'true']),
    );
    const again = ok(await cli(['submit', '--idempotency-key', 'nightly-1', '--', 'true']));
    assert.equal(submittedId(again), first.id);
    await finished(first.id);
  });

  it('--script runs shell code', async () => {
    const r = await cli(['submit', '--follow', '--script', 'for w in a b; do echo "$w"; done; exit 4']);
    assert.equal(r.code, 4, r.stderr);
    assert.equal(r.stdout, 'a\nb\n');
    const shown = keyValues(ok(await cli(['status', String(submittedId(r.stderr))])));
    assert.equal(shown.command, `/bin/sh -c 'for w in a b; do echo "$w"; done; exit 4'`);
    assert.equal(shown.name, 'script');
  });

  it('--env sets variables; NAME alone passes on the caller’s value', async () => {
    const r = await cli(
      [
        'submit',
        '--follow',
        '--env',
        'GREETING=hello world',
        '--env',
        'EMPTY=',
        '--env',
        'FROM_HERE',
        '--',
        'sh',
        '-c',
        'echo "$GREETING|$EMPTY|$FROM_HERE"',
      ],
      { FROM_HERE: 'outside' },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'hello world||outside\n');
  });

  it('passes the command and its options on verbatim, with or without --', async () => {
    const bare = await cli(['submit', '--follow', 'sh', '-c', 'echo "$1 $2"', 'x', '-v', '--wait']);
    assert.equal(bare.code, 0, bare.stderr);
    assert.equal(bare.stdout, '-v --wait\n');
    const dashed = await cli(['submit', '--follow', '--', 'printf', '%s\\n', '--name', '--', '-o']);
    assert.equal(dashed.code, 0, dashed.stderr);
    assert.equal(dashed.stdout, '--name\n--\n-o\n');
  });

  it('--timeout 1 stops sleep 30: failed, with a timeout reason', async () => {
    const r = await cli(['submit', '--wait', '--timeout', '1', '--', 'sleep', '30']);
    const id = submittedId(r.stdout);
    assert.match(r.stdout, new RegExp(`\\njob ${id} failed \\(timed out after 1s\\)\\n$`));
    const j = await job(id);
    assert.notEqual(r.code, 0);
    assert.equal(r.code, j.exitCode ?? 1);
    const shown = keyValues(ok(await cli(['status', String(id)])));
    assert.deepEqual([shown.state, shown.reason, shown.timeout], ['failed', 'timed out after 1s', '1s']);
  });

  it('--workers 2 runs a gang: both ranks, their output labelled, one outcome', async () => {
    const r = await cli([
      'submit',
      '--follow',
      '--workers',
      '2',
      '--request',
      'cpu=100m',
      '--',
      'sh',
      '-c',
      'echo "$BERTH_RANK/$BERTH_WORLD_SIZE"',
    ]);
    const id = submittedId(r.stderr);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.split('\n').filter(Boolean).sort(), ['0: 0/2', '1: 1/2']);
    const shown = keyValues(ok(await cli(['status', String(id)])));
    assert.deepEqual(
      [shown.state, shown.workers, shown.requests],
      ['succeeded', '2 (a gang: ranks 0–1)', 'cpu=100m per worker'],
    );
  });

  it('--retries runs a failed job again; status shows the budget, logs --attempt one attempt', async () => {
    const script = countedRuns(ctx.sb.root, 'retry-count', `echo "run $n"; [ $n -ge 2 ]`);
    const r = await cli(['submit', '--wait', '--retries', '2', '--retry-backoff', '0', '--script', script]);
    assert.equal(r.code, 0, r.stderr);
    const id = submittedId(r.stdout);
    const shown = keyValues(ok(await cli(['status', String(id)])));
    assert.deepEqual(
      [shown.state, shown.retries, shown.attempt],
      [
        'succeeded',
        '1 of 2 used (own failures), 0 of 0 (infrastructure); backoff 0s',
        `2 (each one's output: berth logs --attempt K ${id})`,
      ],
    );
    assert.equal(ok(await cli(['logs', '--attempt', '1', String(id)])), 'run 1\n');
    assert.equal(ok(await cli(['logs', '--attempt', '2', String(id)])), 'run 2\n');
    assert.equal(ok(await cli(['logs', String(id)])), 'run 1\nrun 2\n');
    fails(await cli(['logs', '--attempt', '3', String(id)]), 1, /attempt 3: job \d+ has had attempts 1 to 2/);
    fails(await cli(['logs', '-f', '--attempt', '1', String(id)]), 2, /cannot be used with/);
    fails(await cli(['submit', '--retries', '101', '--', 'true']), 2, /--retries.*at most 100/);
  });

  /** A table's rows as objects keyed by its header. */
  const records = (out: string): Record<string, string>[] => {
    const [header = [], ...body] = rows(out);
    return body.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i] ?? ''])));
  };

  it('--array submits one task per index; jobs shows it as one line, --array its tasks; ID_INDEX names a task', async () => {
    const r = await cli([
      'submit',
      '--wait',
      '--array',
      '0-3%2',
      '--',
      'sh',
      '-c',
      'echo "task $BERTH_ARRAY_INDEX"',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const m =
      /^submitted array (\d+) \[0-3%2\]: 4 tasks, at most 2 at once \(berth jobs --array \d+\)\narray \d+ succeeded: 4 tasks: 4 succeeded\n$/.exec(
        r.stdout,
      );
    assert.ok(m, r.stdout);
    const id = Number(m[1]);
    const listed = records(ok(await cli(['jobs', '--all'])));
    const line = listed.find((l) => l.ID === `${id}_[0-3%2]`);
    assert.ok(line, JSON.stringify(listed));
    assert.deepEqual([line.STATE, line.REASON], ['succeeded', '4 tasks: 4 succeeded']);
    assert.equal(listed.filter((l) => l.ID!.includes(`(${id}_`)).length, 0, 'no task on its own line');
    const tasks = records(ok(await cli(['jobs', '--array', String(id)])));
    assert.deepEqual(
      tasks.map((t) => t.ID!.replace(/^\d+ /, '')).sort(),
      [0, 1, 2, 3].map((i) => `(${id}_${i})`),
    );
    assert.equal(ok(await cli(['logs', `${id}_2`])), 'task 2\n');
    assert.match(
      keyValues(ok(await cli(['status', `${id}_2`]))).array!,
      new RegExp(`^task 2 of array ${id} `),
    );
    fails(await cli(['logs', `${id}_9`]), 1, new RegExp(`array ${id} has no task 9`));

    const gate = gated();
    const held = ok(await cli(['submit', '--array', '0-4%1', '--script', gate.script]));
    const heldId = Number(/^submitted array (\d+)/.exec(held)![1]);
    assert.match(
      ok(await cli(['cancel', String(heldId)])),
      new RegExp(`^cancelled array ${heldId}: 5 tasks: `),
    );
    const after = await waitFor('every task to be cancelled', async () => {
      const t = records(ok(await cli(['jobs', '--array', String(heldId)])));
      return t.every((x) => x.STATE === 'cancelled') ? t : undefined;
    });
    assert.equal(after.length, 5);

    fails(
      await cli(['submit', '--array', '5-1', '--', 'true']),
      1,
      /array: "5-1": 5-1: the range ends before it starts/,
    );
    fails(await cli(['submit', '--follow', '--array', '0-1', '--', 'true']), 2, /--follow follows one job/);
  });

  it('--workers 0 is refused before anything is sent', async () => {
    fails(await cli(['submit', '--workers', '0', '--', 'true']), 2, /--workers.*at least 1/);
  });

  it('--after-any and --after-failed wait for the end, and for a failure', async () => {
    const gate = gated();
    const first = submittedId(ok(await cli(['submit', '--script', `${gate.script}; exit 2`])));
    const any = submittedId(ok(await cli(['submit', '--after-any', String(first), '--', 'echo', 'any'])));
    const failed = submittedId(
      ok(await cli(['submit', '--after-failed', String(first), '--', 'echo', 'failed'])),
    );
    const waiting = keyValues(ok(await cli(['status', String(failed)])));
    assert.deepEqual(
      [waiting.reason, waiting['depends on']],
      [`waiting for job ${first} to fail`, `${first} (failure)`],
    );
    assert.equal(keyValues(ok(await cli(['status', String(any)])))['depends on'], `${first} (any end)`);
    gate.open();
    assert.equal(ok(await cli(['logs', '-f', String(any)])), 'any\n');
    assert.equal(ok(await cli(['logs', '-f', String(failed)])), 'failed\n');
  });

  it('--after makes a job wait for its dependency and run after it', async () => {
    const gate = gated();
    const first = submittedId(ok(await cli(['submit', '--script', gate.script])));
    const second = submittedId(ok(await cli(['submit', '--after', String(first), '--', 'echo', 'after'])));
    const waiting = keyValues(ok(await cli(['status', String(second)])));
    assert.deepEqual(
      [waiting.state, waiting.reason, waiting['depends on']],
      ['queued', `waiting for job ${first} to succeed`, String(first)],
    );
    gate.open();
    const logs = await cli(['logs', '-f', String(second)]);
    assert.equal(ok(logs), 'after\n');
    const [a, b] = [
      parseJson<JobJson>(await cli(['status', String(first), '-o', 'json'])),
      parseJson<JobJson>(await cli(['status', String(second), '-o', 'json'])),
    ];
    assert.deepEqual([a.state, b.state], ['succeeded', 'succeeded']);
    assert.ok(Date.parse(b.startedAt!) >= Date.parse(a.finishedAt!), 'the dependent job started first');
  });

  it('Ctrl-C stops watching, not the job', async () => {
    const gate = gated();
    const watch = start(['submit', '--wait', '--script', gate.script]);
    await watch.shows('stdout', 'submitted job');
    watch.signal('SIGINT');
    const r = await watch.exit;
    const id = submittedId(r.stdout);
    assert.equal(r.code, 130);
    assert.match(
      r.stderr,
      new RegExp(`^\\nberth: stopped watching job ${id}; it goes on \\(berth cancel ${id} stops it\\)\\n$`),
    );
    assert.ok(['queued', 'admitted', 'running'].includes((await job(id)).state));
    gate.open();
    assert.equal((await finished(id)).state, 'succeeded');
  });

  it('has help with examples', async () => {
    const help = ok(await cli(['submit', '--help']));
    assert.match(help, /^Usage: berth submit \[options\] \[command\.\.\.\]$/m);
    assert.match(help, /^Examples:\n {2}\$ berth submit -- sh -c 'echo hello; exit 3'$/m);
    assert.match(help, /--timeout <duration> +stop it after this long/);
  });

  describe('berth logs', () => {
    it('prints the log of a finished job, with or without -f, and exits 0 whatever the job did', async () => {
      assert.equal(ok(await cli(['logs', String(failedId)])), 'hello\n');
      assert.equal(ok(await cli(['logs', '-f', String(failedId)])), 'hello\n');
    });

    it('-f streams output while the job runs, until it ends', async () => {
      const gate = gated('echo first', 'echo second');
      const id = submittedId(ok(await cli(['submit', '--script', gate.script])));
      const follow = start(['logs', '-f', String(id)]);
      await follow.shows('stdout', 'first\n');
      // The job still waits for the gate, so "first" arrived while it ran.
      assert.equal((await job(id)).state, 'running');
      gate.open();
      const { code, stdout, stderr } = await follow.exit;
      assert.deepEqual({ code, stdout, stderr }, { code: 0, stdout: 'first\nsecond\n', stderr: '' });
    });

    it('prints output byte for byte: every byte value, and bytes that are not UTF-8', async () => {
      // Every byte value, and 0xff 0xfe (which decoding would turn into two U+FFFD, 6 bytes).
      const every = Buffer.concat([
        Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
        Buffer.from([0xff, 0xfe]),
      ]);
      const file = join(ctx.sb.root, 'every-byte');
      writeFileSync(file, every);
      chmodSync(file, 0o644); // the server in this process set its umask to 077
      const id = submittedId(ok(await cli(['submit', '--wait', '--', 'cat', file])));
      for (const args of [
        ['logs', String(id)],
        ['logs', '-f', String(id)],
      ]) {
        const r = await cli(args);
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(r.stdoutBytes, every, args.join(' '));
      }
    });
  });
});

describe('berth status and cancel', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('shows state, reason, position and the timeline of a queued job', async () => {
    const gate = gated();
    const blocker = submittedId(ok(await cli(['submit', '--project', 'solo', '--script', gate.script])));
    await waitFor('the blocker to run', async () => (await job(blocker)).state === 'running');
    const next = submittedId(ok(await cli(['submit', '--project', 'solo', '--', 'true'])));
    const last = submittedId(ok(await cli(['submit', '--project', 'solo', '--', 'true'])));

    const out = ok(await cli(['status', String(last)]));
    const shown = keyValues(out);
    assert.deepEqual(
      [shown.id, shown.project, shown.state, shown.position, shown['cluster queue'], shown['exit code']],
      [String(last), 'solo', 'queued', '2', 'one-at-a-time', '-'],
    );
    assert.match(shown.reason ?? '', /quota.*position 2/);
    // In the reader's zone, to the second, and how long ago.
    assert.match(shown.created ?? '', /^\d\d:\d\d:\d\d \((\d+s ago|now)\)$/);
    assert.deepEqual(timelineTypes(out), ['submitted']);
    const asJson = parseJson<JobJson>(await cli(['status', String(next), '-o', 'json']));
    assert.deepEqual([asJson.position, asJson.timeline?.map((e) => e.type)], [1, ['submitted']]);

    // A queued job is cancelled at once.
    assert.equal(ok(await cli(['cancel', String(last)])), `cancelled job ${last}\n`);
    gate.open();
    assert.equal((await finished(next)).state, 'succeeded');
    const blockerStatus = ok(await cli(['status', String(blocker)]));
    assert.equal(keyValues(blockerStatus).worker?.replace(/\d+/, 'N'), '#N (destroyed)');
    const types = timelineTypes(blockerStatus);
    assert.deepEqual([types[0], types.at(-1)], ['submitted', 'succeeded']);
    assert.ok(types.includes('admitted') && types.includes('started'), types.join(' '));
  });

  it('cancels a running job: it ends cancelled', async () => {
    const gate = gated();
    const id = submittedId(ok(await cli(['submit', '--script', gate.script])));
    await waitFor(`job ${id} to run`, async () => (await job(id)).state === 'running');
    assert.match(
      ok(await cli(['cancel', String(id)])),
      new RegExp(`^cancelled job ${id}( \\(stopping\\))?\\n$`),
    );
    const done = await finished(id);
    assert.deepEqual([done.state, done.reason], ['cancelled', 'cancelled by admin']);
    assert.equal(keyValues(ok(await cli(['status', String(id)]))).state, 'cancelled');
  });

  it('refuses to cancel a finished job with one line and a non-zero exit', async () => {
    const id = submittedId(ok(await cli(['submit', '--wait', '--', 'true'])));
    fails(
      await cli(['cancel', String(id)]),
      1,
      new RegExp(`^berth: job ${id} has already finished \\(succeeded\\)\\n$`),
    );
  });

  it('cancels what it can of several jobs and fails for the rest', async () => {
    const done = submittedId(ok(await cli(['submit', '--wait', '--', 'true'])));
    const gate = gated();
    const running = submittedId(ok(await cli(['submit', '--script', gate.script])));
    const r = await cli(['cancel', String(done), String(running), '999999']);
    assert.equal(r.code, 1);
    assert.match(r.stdout, new RegExp(`^cancelled job ${running}( \\(stopping\\))?\\n$`));
    assert.equal(
      r.stderr,
      `berth: job ${done} has already finished (succeeded)\nberth: job 999999 not found\n`,
    );
    assert.equal((await finished(running)).state, 'cancelled');
  });
});

describe('berth jobs', { timeout: SUITE_TIMEOUT_MS }, () => {
  const ids: number[] = [];
  let gate: ReturnType<typeof gated>;

  before(async () => {
    gate = gated();
    for (const command of [['true'], ['false']]) {
      const j = await submit(ctx.server.api, ctx.server.adminToken, 'listing', { command });
      await finished(j.id);
      ids.push(j.id);
    }
    const running = await submit(ctx.server.api, ctx.server.adminToken, 'listing', { script: gate.script });
    const waiting = await submit(ctx.server.api, ctx.server.adminToken, 'listing', {
      command: ['true'],
      dependsOn: [running.id],
    });
    ids.push(running.id, waiting.id);
    await waitFor('the gated job to run', async () => (await job(running.id)).state === 'running');
  });
  after(async () => {
    gate.open();
    await finished(ids[3]!);
  });

  const list = (args: string[], env: Record<string, string> = {}) =>
    cli(['jobs', '--project', 'listing', ...args], env);
  const column = (out: string, name: string) => {
    const [header = [], ...body] = rows(out);
    return body.map((r) => r[header.indexOf(name)]);
  };

  it("lists the project's jobs newest first", async () => {
    const out = ok(await list([]));
    assert.deepEqual(rows(out)[0], ['ID', 'NAME', 'STATE', 'EXIT', 'AGE', 'DURATION', 'REASON']);
    assert.deepEqual(column(out, 'ID'), [...ids].reverse().map(String));
    assert.deepEqual(column(out, 'STATE'), ['queued', 'running', 'failed', 'succeeded']);
    assert.deepEqual(column(out, 'EXIT'), ['-', '-', '1', '0']);
    assert.equal(column(out, 'DURATION')[0], '-');
    assert.equal(column(out, 'REASON')[0], `waiting for job ${ids[2]} to succeed`);
  });

  it('filters by --state', async () => {
    assert.deepEqual(column(ok(await list(['--state', 'failed'])), 'ID'), [String(ids[1])]);
    assert.deepEqual(column(ok(await list(['--state', 'queued,running'])), 'ID'), [
      String(ids[3]),
      String(ids[2]),
    ]);
    assert.equal(ok(await list(['--state', 'cancelled'])), 'no cancelled jobs in project listing\n');
  });

  it('shows the newest --limit jobs and says when there are more; --all shows every one', async () => {
    const limited = await list(['--limit', '2']);
    assert.equal(limited.code, 0);
    assert.deepEqual(column(limited.stdout, 'ID'), [String(ids[3]), String(ids[2])]);
    assert.equal(limited.stderr, '(the newest 2 jobs; --all or --limit N for more)\n');
    const all = parseJson<JobJson[]>(await list(['--all', '-o', 'json']));
    assert.deepEqual(
      all.map((j) => j.id),
      [...ids].reverse(),
    );
  });

  it('cuts reasons to fit the width', async () => {
    const full = ok(await list([]));
    const columns = Math.max(...full.split('\n').map((l) => l.length)) - 4;
    const cut = ok(await list([], { COLUMNS: String(columns) }));
    for (const line of cut.trimEnd().split('\n')) assert.ok(line.length <= columns, `too wide: ${line}`);
    const reason = column(cut, 'REASON')[0] ?? '';
    assert.match(reason, /…$/);
    assert.ok(`waiting for job ${ids[2]} to succeed`.startsWith(reason.slice(0, -1)), reason);
  });
});

describe('bad input', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('is refused with one line and a non-zero exit', async () => {
    await allFail([
      [
        cli(['submit']),
        2,
        /^berth: nothing to run: give a command \(berth submit -- CMD \[ARG\.\.\.\]\), --script 'CODE', or --image REF/,
      ],
      [
        cli(['submit', '--request', 'cpu=lots', '--', 'true']),
        2,
        /argument 'cpu=lots' is invalid\. cpu: "lots" is not a quantity/,
      ],
      [
        cli(['submit', '--timeout', 'soon', '--', 'true']),
        2,
        /argument 'soon' is invalid\. expected a duration such as 90/,
      ],
      [cli(['submit', '--timeout', '0', '--', 'true']), 2, /argument '0' is invalid\. must be at least 1s/],
      [
        cli(['submit', '--after', 'first', '--', 'true']),
        2,
        /'first' is invalid\. a job id is a positive integer/,
      ],
      [
        cli(['submit', '--priority', 'Urgent!', '--', 'true']),
        2,
        /'Urgent!' is invalid\. priority class name "Urgent!" must be a DNS label/,
      ],
      [cli(['submit', '--env', '=x', '--', 'true']), 2, /'=x' is invalid\. expected NAME=VALUE/],
      [
        cli(['submit', '--script', 'true', '--', 'true']),
        2,
        /give either --script or a command after --, not both/,
      ],
      [
        cli(['submit', '--wait', '--follow', '--', 'true']),
        2,
        /'--wait' cannot be used with option '--follow'/,
      ],
      [
        cli(['submit', '--target', 'moon', '--', 'true']),
        1,
        /^berth: unknown target "moon" \(known: local\)\n$/,
      ],
      [cli(['submit', '--resource', 'licence', '--', 'true']), 1, /^berth: unknown resource type "licence"/],
      [
        cli(['status', 'abc']),
        2,
        /^berth: command-argument value 'abc' is invalid for argument 'job'\. a job id is a positive integer/,
      ],
      [cli(['status', '999999']), 1, /^berth: job 999999 not found\n$/],
      [cli(['logs', '-f', '1.5']), 2, /'1\.5' is invalid for argument 'job'/],
      [cli(['cancel', '0']), 2, /'0' is invalid for argument 'job'/],
      [
        cli(['jobs', '--state', 'done']),
        2,
        /"done" is not a job state \(queued, admitted, running, succeeded, failed, cancelled\)/,
      ],
      [cli(['jobs', '--all', '--limit', '5']), 2, /'--all' cannot be used with option '--limit <n>'/],
      [cli(['jobs', '--project', 'nope']), 1, /^berth: project "nope" not found\n$/],
    ]);
  });
});
