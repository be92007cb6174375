/** `berth simulate` as a subprocess: no server, one-line errors, what-if flags. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

  it('--help explains it with an example', async () => {
    const help = ok(await berth(sb, ['simulate', '--help']));
    assert.match(help, /--quota <class=n\|queue:resource=amount>/);
    assert.match(help, /\$ berth simulate --from-server --quota default:cpu=16/);
    assert.match(help, /\$ berth simulate bench\/kueue\/baseline\.yaml --quota cq=30/);
  });
});
