/** `berth simulate` as a subprocess: no server, one-line errors, what-if flags. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { allFail, berth, fails, ok, parseJson, sandbox, type Sandbox } from '../cli/cli.js';
import type { ScenarioReport } from '../../src/simulate/report.js';

/** One queue of quota 2; three 1-cpu workloads of 100 ms, one every 10 ms. */
const TINY = `
cohorts:
  - className: cohort
    count: 1
    queuesSets:
      - className: cq
        count: 1
        nominalQuota: 2
        workloadsSets:
          - count: 3
            creationIntervalMs: 10
            workloads:
              - { className: small, runtimeMs: 100, priority: 1, request: 1 }
`;

interface Output {
  queues: number;
  report: ScenarioReport;
  admissionLatencyMs: number;
}

describe('berth simulate', () => {
  let sb: Sandbox;
  let file: string;
  before(() => {
    sb = sandbox();
    file = join(sb.cwd, 'tiny.yaml');
    writeFileSync(file, TINY);
  });
  after(() => sb.remove());

  it('runs without a server and prints the report', async () => {
    const out = ok(await berth(sb, ['simulate', file]));
    assert.match(out, /^simulated .*tiny\.yaml: 1 queues in 1 cohorts, 3 workloads \(cpu\)$/m);
    assert.match(out, /^wall time: 0\.2 s \(3 workloads\)$/m);
    assert.match(out, /^cq +1 +2 +71\.4 %$/m);
    assert.match(out, /^small +3 +0\.0 s +0\.1 s +0 +0\.0 cpu·s$/m);
    assert.match(out, /^p99 scheduler decision time: /m);
  });

  it('-o json gives the report; --quota changes the outcome', async () => {
    const [baseRun, moreRun, humanRun] = await Promise.all([
      berth(sb, ['simulate', file, '-o', 'json']),
      berth(sb, ['simulate', file, '--quota', 'cq=3', '-o', 'json']),
      berth(sb, ['simulate', file, '--quota', 'cq=3']),
    ]);
    const base = parseJson<Output>(baseRun);
    assert.equal(base.queues, 1);
    assert.equal(base.report.wallMs, 210);
    const more = parseJson<Output>(moreRun);
    // With room for all three, the last is admitted at 30 and done at 130.
    assert.equal(more.report.wallMs, 130);
    assert.equal(more.report.queueClasses[0]?.nominal, 3);
    const human = ok(humanRun);
    assert.match(human, /^what if: quota cq=3$/m);
  });

  it('--admission-latency delays every run', async () => {
    const r = parseJson<Output>(
      await berth(sb, ['simulate', file, '--admission-latency', '5', '-o', 'json']),
    );
    assert.equal(r.admissionLatencyMs, 5);
    assert.equal(r.report.wallMs, 220);
  });

  it('a bad config: one line naming the key, exit 1', async () => {
    const bad = join(sb.cwd, 'bad.yaml');
    writeFileSync(bad, TINY.replace('nominalQuota: 2', 'nominalQuota: lots'));
    fails(
      await berth(sb, ['simulate', bad]),
      1,
      /^berth: invalid scenario: .*bad\.yaml: cohorts\[0\]\.queuesSets\[0\]\.nominalQuota: expected integer\n$/,
    );
    fails(
      await berth(sb, ['simulate', join(sb.cwd, 'missing.yaml')]),
      1,
      /cannot read scenario .*missing\.yaml: no such file/,
    );
  });

  it('usage mistakes: exit 2', async () => {
    await allFail([
      [
        berth(sb, ['simulate', file, '--quota', 'gpu=3']),
        2,
        /--quota: no queue class named "gpu" in the scenario \(classes: cq\)/,
      ],
      [berth(sb, ['simulate', file, '--quota', 'cq']), 2, /expected CLASS=N/],
      [berth(sb, ['simulate', file, '--admission-latency', '-1']), 2, /admission-latency/],
      [berth(sb, ['simulate']), 2, /give a scenario file, or --from-server for the live cluster/],
      [berth(sb, ['simulate', file, '--from-server']), 2, /a scenario file or --from-server, not both/],
      [berth(sb, ['simulate', file, '--weight', 'a=2']), 2, /--weight needs --from-server/],
      [
        berth(sb, ['simulate', '--from-server', '--quota', 'cq=3']),
        2,
        /--quota cq=3: expected QUEUE:RESOURCE=AMOUNT, e\.g\. default:cpu=16/,
      ],
      [
        berth(sb, ['simulate', '--from-server', '--weight', 'a=0']),
        2,
        /the weight must be a number greater than 0/,
      ],
    ]);
  });

  it('--swf replays a trace, .gz too; -o json sums it up; --records writes one line per job', async () => {
    // A machine of 2: job 1 holds 1 until 100 s; 2 wants both; 3 ends by then, 4 would not.
    const swf = [
      '; MaxProcs: 2',
      '1 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1',
      '2 10 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 -1 -1 -1 -1',
      '3 10 -1 20 1 -1 -1 1 50 -1 1 1 1 -1 -1 -1 -1 -1',
      '4 10 -1 200 1 -1 -1 1 500 -1 1 1 1 -1 -1 -1 -1 -1',
      '5 10 -1 0 1 -1 -1 1 500 -1 1 1 1 -1 -1 -1 -1 -1',
    ].join('\n');
    const trace = join(sb.cwd, 'tiny.swf');
    writeFileSync(trace, swf);
    writeFileSync(`${trace}.gz`, gzipSync(swf));
    const records = join(sb.cwd, 'runs.csv');
    const [backfill, human, fifo] = await Promise.all([
      berth(sb, ['simulate', '--swf', trace, '-o', 'json', '--records', records]),
      berth(sb, ['simulate', '--swf', `${trace}.gz`]),
      berth(sb, ['simulate', '--swf', trace, '--strategy', 'BestEffortFIFO', '-o', 'json']),
    ]);
    const r = parseJson<{ jobs: number; skipped: number; maxWait: number; strategy: string }>(backfill);
    assert.deepEqual([r.jobs, r.skipped, r.maxWait, r.strategy], [4, 1, 100, 'Backfill']);
    assert.equal(
      readFileSync(records, 'utf8'),
      'id,submit,start,end,procs\n1,0,0,100,1\n2,10,100,110,2\n3,10,10,30,1\n4,10,110,310,1\n',
    );
    assert.match(
      ok(human),
      /^replayed .*tiny\.swf\.gz: 4 jobs \(1 records skipped\) on 2 processors, Backfill$/m,
    );
    // BestEffortFIFO lets 4 in once 3 is done, at 30 s, and 2 waits for it until 230 s.
    assert.equal(parseJson<{ maxWait: number }>(fifo).maxWait, 220);
    await allFail([
      [
        berth(sb, ['simulate', '--swf', join(sb.cwd, 'none.swf')]),
        1,
        /cannot read trace .*none\.swf: no such file/,
      ],
      [berth(sb, ['simulate', '--swf', trace, '--procs', '0']), 2, /--procs/],
      [berth(sb, ['simulate', file, '--strategy', 'Backfill']), 2, /--strategy needs --swf/],
      [berth(sb, ['simulate', file, '--estimates', 'learned']), 2, /--estimates needs --swf/],
      [
        berth(sb, ['simulate', '--swf', trace, '--estimates', 'guessed']),
        2,
        /Allowed choices are requested, learned/,
      ],
      [berth(sb, ['simulate', '--swf', trace, '--quota', 'cq=3']), 2, /--quota does not apply to --swf/],
      [berth(sb, ['simulate', '--swf', trace, '--strategy', 'Fast']), 2, /Allowed choices are StrictFIFO/],
    ]);
  });

  it('--help explains it with an example', async () => {
    const help = ok(await berth(sb, ['simulate', '--help']));
    assert.match(help, /--quota <class=n\|queue:resource=amount>/);
    assert.match(help, /\$ berth simulate --from-server --quota default:cpu=16/);
    assert.match(help, /\$ berth simulate bench\/kueue\/baseline\.yaml --quota cq=30/);
  });
});
