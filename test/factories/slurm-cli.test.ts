/**
 * The Slurm CLI driver: its pure parsing and argv building, then every call against the real
 * local cluster of scripts/slurm/cluster.sh (3 nodes n1..n3, MinJobAge=2 s).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import {
  buildSbatch,
  isEndedState,
  SlurmCli,
  SlurmError,
  timeLimitMinutes,
  type SlurmJob,
  type SubmitRequest,
} from '../../src/factories/slurm/slurm-cli.js';
import {
  decodeWaitStatus,
  expandHostlist,
  FIELD_SEP,
  parseSlurmTime,
  parseSqueue,
  RECORD_SEP,
  SQUEUE_FORMAT,
} from '../../src/factories/slurm/squeue-format.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

describe('Slurm hostlists', () => {
  it('expands ranges, lists and several names, keeping zero padding', () => {
    assert.deepEqual(expandHostlist('n[1-3]'), ['n1', 'n2', 'n3']);
    assert.deepEqual(expandHostlist('n[1,3-4],m5'), ['n1', 'n3', 'n4', 'm5']);
    assert.deepEqual(expandHostlist('node[01-03]'), ['node01', 'node02', 'node03']);
    assert.deepEqual(expandHostlist('n[9-11]'), ['n9', 'n10', 'n11']);
    assert.deepEqual(expandHostlist('n[08-10]'), ['n08', 'n09', 'n10']);
    assert.deepEqual(expandHostlist('n1'), ['n1']);
    assert.deepEqual(expandHostlist('n[1-2]-ib,gpu7'), ['n1-ib', 'n2-ib', 'gpu7']);
    assert.deepEqual(expandHostlist('r[1-2]n[1-2]'), ['r1n1', 'r1n2', 'r2n1', 'r2n2']);
    assert.deepEqual(expandHostlist(''), []);
  });

  it('refuses malformed lists', () => {
    for (const bad of ['n[3-1]', 'n[1-2', 'n1-2]', 'n[a]', 'n[1-]', 'n[1-99999999]']) {
      assert.throws(() => expandHostlist(bad), /hostlist/, bad);
    }
  });
});

describe('Slurm time strings', () => {
  it("reads Slurm's formats; a bare number is minutes, as Slurm reads it", () => {
    const cases: [string, number | null][] = [
      ['UNLIMITED', null],
      ['INVALID', null],
      ['NOT_SET', null],
      ['', null],
      ['1-02:03:04', 93_784],
      ['02:03:04', 7384],
      ['03:04', 184],
      ['0:59', 59],
      ['4', 240],
      ['1-2', 93_600],
      ['1-2:3', 93_780],
    ];
    for (const [text, seconds] of cases) assert.equal(parseSlurmTime(text), seconds, text);
  });

  it('decodes the wait status squeue reports as exit_code', () => {
    assert.deepEqual(decodeWaitStatus('0'), { exitCode: 0, exitSignal: null });
    assert.deepEqual(decodeWaitStatus('768'), { exitCode: 3, exitSignal: null });
    assert.deepEqual(decodeWaitStatus('15'), { exitCode: null, exitSignal: 15 });
    assert.deepEqual(decodeWaitStatus(''), { exitCode: null, exitSignal: null });
  });
});

describe('squeue records', () => {
  const record = (...fields: string[]) => fields.join(FIELD_SEP) + RECORD_SEP + '\n';

  it('asks for unpadded fields with the name last', () => {
    assert.ok(SQUEUE_FORMAT.startsWith(`JobID:0${FIELD_SEP},State:0${FIELD_SEP},`));
    assert.ok(SQUEUE_FORMAT.endsWith(`,Name:0${RECORD_SEP}`));
  });

  it('parses names with spaces, separators and newlines, pending and ended jobs', () => {
    const out =
      record('7', 'RUNNING', 'None', 'n[1-3]', '1:00:05', '0', 'a name | with  spaces') +
      record('8', 'PENDING', 'Resources', '', 'UNLIMITED', '0', `odd${FIELD_SEP}name\nline two`) +
      record('9', 'FAILED', 'NonZeroExitCode', 'n2', '365-00:00:00', '768', 'x') +
      record('10', 'CANCELLED', 'None', 'n1', '0:59', '15', '') +
      record('11_2', 'COMPLETING', 'None', 'n3', '0:10', '0', 'arr') +
      // slurmctld's one-year end time for a job without a limit, seen on a running job in CI.
      record('12', 'RUNNING', 'None', 'n1', '364-23:59:59', '0', 'nolimit') +
      record('13', 'RUNNING', 'None', 'n1', '363-00:00:00', '0', 'long');
    const jobs = parseSqueue(out);
    assert.deepEqual(jobs[0], {
      id: '7',
      name: 'a name | with  spaces',
      state: 'RUNNING',
      reason: 'None',
      nodes: ['n1', 'n2', 'n3'],
      timeLeftSeconds: 3605,
      exitCode: null,
      exitSignal: null,
    });
    assert.deepEqual(
      jobs
        .slice(1)
        .map((j) => [j.id, j.name, j.state, j.reason, j.nodes, j.timeLeftSeconds, j.exitCode, j.exitSignal]),
      [
        ['8', `odd${FIELD_SEP}name\nline two`, 'PENDING', 'Resources', [], null, null, null],
        ['9', 'x', 'FAILED', 'NonZeroExitCode', ['n2'], null, 3, null],
        ['10', '', 'CANCELLED', 'None', ['n1'], null, null, 15],
        ['11_2', 'arr', 'COMPLETING', 'None', ['n3'], 10, null, null],
        ['12', 'nolimit', 'RUNNING', 'None', ['n1'], null, null, null],
        ['13', 'long', 'RUNNING', 'None', ['n1'], 363 * 86_400, null, null],
      ],
    );
    assert.deepEqual(parseSqueue(''), []);
  });

  it('refuses truncated output', () => {
    assert.throws(() => parseSqueue(`7${FIELD_SEP}RUNNING`), /unterminated/);
    assert.throws(() => parseSqueue(record('7', 'RUNNING')), /malformed/);
  });
});

describe('sbatch arguments', () => {
  const base: SubmitRequest = { name: 'w', script: '#!/bin/sh\n' };

  it('maps every field, with extraArgs last so configuration wins', () => {
    const { args, env } = buildSbatch(
      {
        ...base,
        name: 'berth-w 1',
        partition: 'main',
        account: 'acct',
        qos: 'high',
        timeLimitSeconds: 61,
        cpusPerTask: 2,
        nodes: 3,
        workdir: '/work dir',
        output: '/logs/%j.out',
        env: { A: 'x,y', B_2: '$HOME "q"' },
        inherit: ['PATH', 'A', 'HOME'],
        extraArgs: ['--hold', '--exclusive'],
      },
      { PATH: '/bin', A: 'from the submitter', SECRET: 'x', SBATCH_ACCOUNT: 'y' },
    );
    assert.deepEqual(args, [
      '--parsable',
      '--job-name=berth-w 1',
      '--partition=main',
      '--account=acct',
      '--qos=high',
      '--time=2',
      '--cpus-per-task=2',
      '--nodes=3',
      // A gang: one task (its member's agent) on each node.
      '--ntasks-per-node=1',
      '--chdir=/work dir',
      '--output=/logs/%j.out',
      '--export=ALL',
      '--hold',
      '--exclusive',
    ]);
    // The values travel in sbatch's environment, never in its argv; that environment holds the
    // job's variables and the inherited ones (the job's own win), nothing else of the submitter's.
    assert.deepEqual(env, { PATH: '/bin', A: 'x,y', B_2: '$HOME "q"' });
  });

  it("has defaults: one node, output to /dev/null, none of the submitter's environment", () => {
    assert.deepEqual(buildSbatch(base, { PATH: '/bin' }), {
      args: ['--parsable', '--job-name=w', '--nodes=1', '--output=/dev/null', '--export=ALL'],
      env: {},
    });
    // All of it, but what sbatch would read as its own options.
    assert.deepEqual(buildSbatch({ ...base, inherit: true }, { PATH: '/bin', SBATCH_QOS: 'q' }).env, {
      PATH: '/bin',
    });
    assert.throws(() => buildSbatch({ ...base, inherit: ['A-B'] }), /bad environment variable name/);
  });

  it('rounds time limits up to whole minutes, at least one', () => {
    const cases: [number, number][] = [
      [0, 1],
      [0.5, 1],
      [1, 1],
      [60, 1],
      [60.001, 2],
      [61, 2],
      [3600, 60],
      [86_401, 1441],
    ];
    for (const [seconds, minutes] of cases) assert.equal(timeLimitMinutes(seconds), minutes, String(seconds));
    assert.throws(() => timeLimitMinutes(-1), RangeError);
    assert.throws(() => timeLimitMinutes(Number.NaN), RangeError);
  });

  it('refuses what sbatch would misread', () => {
    const bad: Partial<SubmitRequest>[] = [
      { name: '' },
      { name: 'two\nlines' },
      { nodes: 0 },
      { nodes: 1.5 },
      { cpusPerTask: 0 },
      { env: { 'A,B': 'x' } },
      { env: { 'A=B': 'x' } },
      { env: { '1A': 'x' } },
      { env: { SLURM_CONF: '/x' } },
      { env: { SBATCH_PARTITION: 'p' } },
      { env: { A: 'nul\0' } },
    ];
    for (const b of bad) assert.throws(() => buildSbatch({ ...base, ...b }), RangeError, JSON.stringify(b));
  });
});

/** waitFor, but calling squeue at most 5 times a second: the controller is shared. */
const poll = <T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 30_000) => {
  let first = true;
  return waitFor(
    what,
    async () => {
      if (!first) await delay(200);
      first = false;
      return check();
    },
    timeoutMs,
  );
};

/** An id far above any this cluster hands out (ids start at 1), below Slurm's MaxJobId. */
const UNKNOWN_ID = '60000000';

describe('SlurmCli on the local cluster', { skip: slurmSkip() }, () => {
  let slurm: SlurmCli;
  let dir: string;
  const prefix = `berth-test-${process.pid}-`;

  before(async () => {
    const { env } = await startSlurm();
    assert.ok(env.SLURM_CONF);
    slurm = new SlurmCli({ slurmConf: env.SLURM_CONF });
    dir = scratchDir('berth-slurm-cli-');
  });

  after(async () => {
    for (const j of await slurm.jobs({ namePrefix: prefix }))
      if (!isEndedState(j.state)) await slurm.cancel(j.id);
    rmSync(dir, { recursive: true, force: true });
  });

  /** A fresh working directory and a job in it; resolves with the id and the directory. */
  const submit = async (suffix: string, body: string, req: Partial<SubmitRequest> = {}) => {
    const workdir = join(dir, suffix);
    mkdirSync(workdir);
    const id = await slurm.submit({ name: prefix + suffix, script: `#!/bin/sh\n${body}\n`, workdir, ...req });
    return { id, workdir };
  };
  const job = async (id: string): Promise<SlurmJob | undefined> => (await slurm.jobs({ ids: [id] }))[0];
  const inState = (id: string, ...states: string[]) =>
    poll(`job ${id} ${states.join('/')}`, async () => {
      const j = await job(id);
      return j && states.includes(j.state) && j;
    });
  const fileIn = (path: string) =>
    poll(`${path}`, async () => existsSync(path) && readFileSync(path, 'utf8'), 30_000);
  /** The script's way to wait for the test: until the file "go" appears. */
  const WAIT_GO = 'while [ ! -e go ]; do sleep 0.1; done';

  it('answers sinfo; unreachable or missing commands are reported', async () => {
    assert.equal(await slurm.available(), true);
    const missing = new SlurmCli({ env: { PATH: '/nonexistent' } });
    assert.match((await missing.unavailableReason()) ?? '', /sinfo not found/);
    // A missing slurm.conf makes the commands retry for 60 s: the timeout ends that.
    const stuck = new SlurmCli({ slurmConf: join(dir, 'none.conf'), commandTimeoutMs: 500 });
    assert.match((await stuck.unavailableReason()) ?? '', /no answer within 500 ms: .*none\.conf/);
  });

  it('runs a script: its file appears, jobs() shows it running, then it leaves squeue', async () => {
    const { id, workdir } = await submit(
      'file',
      `echo "$SLURM_JOB_ID" > out.tmp && mv out.tmp out\n${WAIT_GO}`,
    );
    assert.match(id, /^\d+$/);
    assert.equal((await fileIn(join(workdir, 'out'))).trim(), id);
    const [running, ...others] = await slurm.jobs({ ids: [id], namePrefix: prefix });
    assert.deepEqual(others, []);
    assert.ok(running);
    assert.equal(running.name, `${prefix}file`);
    assert.equal(running.state, 'RUNNING');
    assert.equal(running.reason, 'None');
    assert.equal(running.nodes.length, 1);
    assert.match(running.nodes[0] ?? '', /^n\d+$/);
    assert.equal(running.timeLeftSeconds, null, 'no time limit');
    assert.equal(running.exitCode, null);
    assert.ok((await slurm.jobs({ namePrefix: prefix })).some((j) => j.id === id));

    writeFileSync(join(workdir, 'go'), '');
    const seen = new Set<string>();
    let ended: SlurmJob | undefined;
    // Purged MinJobAge (2 s) after it ends, at the controller's next 10 s sweep.
    await poll('the job to leave squeue', async () => {
      const j = await job(id);
      if (j) seen.add(j.state);
      if (j && isEndedState(j.state)) ended = j;
      return j === undefined;
    });
    assert.ok(!seen.has('FAILED') && !seen.has('CANCELLED'), [...seen].join(' '));
    if (ended) assert.deepEqual([ended.state, ended.exitCode, ended.timeLeftSeconds], ['COMPLETED', 0, null]);
  });

  it('reports a failed script: FAILED, its exit status and reason', async () => {
    const { id } = await submit('exit3', 'exit 3');
    const failed = await inState(id, 'FAILED');
    assert.deepEqual([failed.exitCode, failed.exitSignal, failed.reason], [3, null, 'NonZeroExitCode']);
  });

  it("shows pending jobs with Slurm's reason: held, and more nodes than exist", async () => {
    const held = await submit('held', 'true', { extraArgs: ['--hold'] });
    const big = await submit('big', 'true', { nodes: 4 });
    const h = await poll('the held job pending', async () => {
      const j = await job(held.id);
      return j?.reason === 'JobHeldUser' && j;
    });
    assert.deepEqual([h.state, h.nodes], ['PENDING', []]);
    const b = await poll('the 4-node job pending with a reason', async () => {
      const j = await job(big.id);
      return j && j.reason !== 'None' && j;
    });
    assert.equal(b.state, 'PENDING');
    assert.match(b.reason, /^(PartitionNodeLimit|PartitionConfig|Resources)$/);
    await slurm.cancel(held.id);
    await slurm.cancel(big.id);
    for (const id of [held.id, big.id]) {
      await poll(`job ${id} cancelled`, async () => {
        const j = await job(id);
        return j === undefined || j.state === 'CANCELLED';
      });
    }
  });

  it('jobs({ ids }): an id squeue does not know is absent, not an error', async () => {
    const { id } = await submit('known', 'true', { extraArgs: ['--hold'] });
    const both = await slurm.jobs({ ids: [UNKNOWN_ID, id] });
    assert.deepEqual(
      both.map((j) => j.id),
      [id],
    );
    // Alone, an unknown id makes squeue itself fail ("Invalid job id specified").
    assert.deepEqual(await slurm.jobs({ ids: [UNKNOWN_ID] }), []);
    assert.deepEqual(await slurm.jobs({ ids: [UNKNOWN_ID, String(Number(UNKNOWN_ID) + 1)] }), []);
    assert.deepEqual(await slurm.jobs({ ids: [] }), []);
    // Long lists: 5000 ids fit in squeue's --jobs; 10000 do not, and are filtered here instead.
    for (const n of [5000, 10_000]) {
      const many = Array.from({ length: n }, (_, k) => String(Number(UNKNOWN_ID) + k));
      assert.deepEqual(
        (await slurm.jobs({ ids: [...many, id] })).map((j) => j.id),
        [id],
        `${n} ids`,
      );
    }
    assert.deepEqual(await slurm.jobs({ ids: [id], namePrefix: 'not-this-' }), []);
    await assert.rejects(slurm.jobs({ ids: ['12;rm'] }), RangeError);
    await slurm.cancel(id);
  });

  it('cancels a running job; an ended or unknown job is no error', async () => {
    const { id } = await submit('cancel', 'exec sleep 300');
    await inState(id, 'RUNNING');
    await slurm.cancel(id);
    const after = await poll('the job to stop running', async () => {
      const j = await job(id);
      return j === undefined ? 'gone' : j.state !== 'RUNNING' && j.state;
    });
    assert.match(after, /^(CANCELLED|COMPLETING|gone)$/);
    await slurm.cancel(id);
    await slurm.cancel(UNKNOWN_ID);
  });

  it('signals the batch shell with cancel({ signal, full })', async () => {
    const { id, workdir } = await submit(
      'signal',
      `trap 'echo got > sig; exit 0' USR1\necho ready > ready\nwhile :; do sleep 0.1; done`,
    );
    await fileIn(join(workdir, 'ready'));
    await slurm.cancel(id, { signal: 'USR1', full: true });
    assert.equal((await fileIn(join(workdir, 'sig'))).trim(), 'got');
    await assert.rejects(slurm.cancel(id, { signal: 'USR1; x' }), RangeError);
  });

  it('runs a 3-node job: nodes expanded, time left within its limit', async () => {
    const { id, workdir } = await submit('gang', WAIT_GO, { nodes: 3, timeLimitSeconds: 90 });
    const j = await inState(id, 'RUNNING');
    assert.deepEqual(j.nodes, ['n1', 'n2', 'n3']);
    assert.ok(
      j.timeLeftSeconds !== null && j.timeLeftSeconds > 60 && j.timeLeftSeconds <= 120,
      `${j.timeLeftSeconds}`,
    );
    writeFileSync(join(workdir, 'go'), '');
    await poll('the 3-node job to end', async () => {
      const e = await job(id);
      return e === undefined || (isEndedState(e.state) && e);
    });
  });

  it('passes environment values unchanged: spaces, quotes, $, commas, newlines', async () => {
    const env: Record<string, string> = {
      SPACES: '  two  words ',
      QUOTES: `it's "quoted" \`date\``,
      DOLLAR: '$HOME ${PATH} $(id)',
      COMMAS: 'a,b=c,,d,ALL',
      NEWLINE: 'line1\nline2',
      OTHER: 'ünïcödé \\ back\\slash; *',
      EMPTY: '',
    };
    const dump = Object.keys(env)
      .map((k) => `printf '%s' "$${k}" > ${k}`)
      .join('\n');
    const { workdir } = await submit('env', `${dump}\ntouch done`, { env });
    await fileIn(join(workdir, 'done'));
    for (const [k, v] of Object.entries(env)) assert.equal(readFileSync(join(workdir, k), 'utf8'), v, k);
  });

  it("passes only the named variables of the submitter's environment", async () => {
    process.env.BERTH_TEST_SECRET = 'not for jobs';
    process.env.BERTH_TEST_SHARED = 'for jobs';
    try {
      const script = 'printf "%s|%s" "$BERTH_TEST_SECRET" "$BERTH_TEST_SHARED" > seen\ntouch done';
      const { workdir } = await submit('inherit', script, { inherit: ['BERTH_TEST_SHARED'] });
      await fileIn(join(workdir, 'done'));
      assert.equal(readFileSync(join(workdir, 'seen'), 'utf8'), '|for jobs');
    } finally {
      delete process.env.BERTH_TEST_SECRET;
      delete process.env.BERTH_TEST_SHARED;
    }
  });

  it("fails a submission with SlurmError and Slurm's message on one line", async () => {
    const err = await slurm.submit({ name: `${prefix}bad`, script: '#!/bin/sh\n', partition: 'nope' }).then(
      () => assert.fail('submitted to a partition that does not exist'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SlurmError, String(err));
    assert.match(
      err.message,
      /^sbatch .*--partition=nope.*: invalid partition specified: nope; .*\(exit 1\)$/,
    );
    assert.doesNotMatch(err.message, /\n/);
    assert.equal(err.exitCode, 1);
    assert.match(err.stderr, /Invalid partition name specified/);
  });
});
