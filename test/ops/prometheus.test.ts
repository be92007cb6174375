/**
 * What berth ships for operators, checked against a real Prometheus (Debian's `prometheus`, which
 * CI installs): `promtool check metrics` accepts a scrape; `promtool test rules` passes the rules'
 * unit tests (deploy/prometheus/berth-rules.test.yml, where each alert is fired); and a Prometheus
 * server scraping a berth server while jobs flow evaluates every rule without error, every
 * recorded series and every panel of the Grafana dashboard (deploy/grafana/berth-dashboard.json)
 * returns data, and every metric an alert names has series.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { submit, waitDone } from '../helpers/jobs.js';
import { ROOT } from '../helpers/root.js';
import { scratchDir } from '../helpers/scratch.js';
import { call, useTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const RULES = join(ROOT, 'deploy', 'prometheus');
const DASHBOARD = join(ROOT, 'deploy', 'grafana', 'berth-dashboard.json');
const has = (tool: string) => spawnSync(tool, ['--version']).status === 0;
const skip =
  has('prometheus') && has('promtool') ? false : 'Prometheus is not installed (apt-get install prometheus)';

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
}
const rules = (): Rule[] =>
  (
    parse(readFileSync(join(RULES, 'berth-rules.yml'), 'utf8')) as { groups: { rules: Rule[] }[] }
  ).groups.flatMap((g) => g.rules);
const panelExprs = (): string[] =>
  (
    JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { targets: { expr: string }[] }[] }
  ).panels.flatMap((p) => p.targets.map((t) => t.expr));

/** A port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

describe('berth under a real Prometheus', { skip }, () => {
  const server = useTestServer({
    // A well and devices, so that their panels have series; per-project series for theirs.
    config: [
      'graceSeconds: 1',
      'factories:',
      '  local: { kind: local, capacity: 4, devices: { gpu: { count: 1 } } }',
      'targets:',
      '  local: { factory: local }',
      'resources:',
      '  licence: { kind: semaphore, capacity: 1 }',
      'metrics: { perProject: true }',
    ].join('\n'),
  });
  let work: string;
  let prometheus: ChildProcess | undefined;
  let promUrl: string;

  before(async () => {
    work = scratchDir('berth-prometheus-');
    const s = server();
    writeFileSync(join(work, 'token'), s.adminToken, { mode: 0o600 });
    const target = new URL(s.url).host;
    writeFileSync(
      join(work, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        `rule_files: [${JSON.stringify(join(RULES, 'berth-rules.yml'))}]`,
        'scrape_configs:',
        '  - job_name: berth',
        '    metrics_path: /api/v1/metrics',
        `    authorization: { type: Bearer, credentials_file: ${JSON.stringify(join(work, 'token'))} }`,
        `    static_configs: [{ targets: [${JSON.stringify(target)}] }]`,
      ].join('\n'),
    );
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(work, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(work, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: 'ignore' },
    );
    await waitFor(
      'Prometheus to be ready',
      async () => (await fetch(`${promUrl}/-/ready`).catch(() => null))?.ok,
    );
    // A queue of one cpu, so that jobs wait for each other (the wait histograms move).
    const queue = { name: 'one', quota: { cpu: '1' }, cohort: 'lab' };
    assert.equal((await call(s.api, s.adminToken, 'POST', '/cluster-queues', queue)).status, 201);
    assert.equal(
      (await call(s.api, s.adminToken, 'POST', '/projects', { name: 'ops', clusterQueue: 'one' })).status,
      201,
    );
  });
  after(() => {
    prometheus?.kill('SIGKILL');
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** The result of an instant query: its series. */
  const query = async (expr: string): Promise<unknown[]> => {
    const r = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await r.json()) as { status: string; error?: string; data?: { result: unknown[] } };
    assert.equal(body.status, 'success', `${expr}: ${body.error}`);
    return body.data!.result;
  };

  it("passes promtool check metrics on a scrape (berth's own families)", async () => {
    const s = server();
    const scraped = (await call<string>(s.api, s.adminToken, 'GET', '/metrics')).text;
    // prom-client's process and Node.js families are its own (nodejs_active_handles_total is a
    // gauge named as a counter): checked are berth's.
    const text = scraped
      .split('\n')
      .filter((l) => /^(# (HELP|TYPE) )?berth_/.test(l))
      .join('\n')
      .concat('\n');
    assert.match(text, /^# TYPE berth_start_wait_seconds histogram$/m);
    const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });

  it("passes the rules' unit tests, where each alert fires", () => {
    const r = spawnSync('promtool', ['test', 'rules', 'berth-rules.test.yml'], {
      cwd: RULES,
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const tested = readFileSync(join(RULES, 'berth-rules.test.yml'), 'utf8');
    for (const { alert } of rules().filter((x) => x.alert))
      assert.match(tested, new RegExp(`alertname: ${alert}\\n[^]*?exp_alerts:\\n`), `${alert} has a test`);
  });

  it('gets data for every recorded series and dashboard panel, and every series an alert names, while jobs flow', async () => {
    const s = server();
    // Jobs flow through the queue in waves until every expression has data (rates need two
    // scrapes with a change between them).
    const pending = [
      ...rules()
        .filter((r) => r.record)
        .map((r) => r.record!),
      ...panelExprs(),
    ];
    const names = new Set(
      rules()
        .filter((r) => r.alert)
        // A metric's name, not a recorded series' (`queue:berth_…:ratio`, checked above).
        .flatMap((r) => r.expr.match(/(?<![\w:])berth_[a-z0-9_]+(?![\w:])/g) ?? []),
    );
    // Said if it never comes: what Prometheus last made of its scrapes.
    const targets = async () => JSON.stringify(await (await fetch(`${promUrl}/api/v1/targets`)).json());
    try {
      await waitFor(
        'data for every expression',
        async () => {
          const wave = await Promise.all(
            [0, 1].map(() =>
              submit(s.api, s.adminToken, 'ops', { command: ['sleep', '0.3'], requests: { cpu: '1' } }),
            ),
          );
          for (const j of wave) await waitDone(s.api, s.adminToken, j.id);
          for (const expr of [...pending])
            if ((await query(expr)).length > 0) pending.splice(pending.indexOf(expr), 1);
          return pending.length === 0;
        },
        90_000,
      );
    } catch (e) {
      throw new Error(
        `${(e as Error).message}; none yet for ${pending.join(' | ')}; scrapes: ${await targets()}`,
      );
    }
    for (const name of names) assert.ok((await query(`count(${name})`)).length > 0, `${name} has series`);
    // Every rule evaluated without an error.
    const r = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
      data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
    };
    for (const rule of r.data.groups.flatMap((g) => g.rules))
      assert.equal(rule.health, 'ok', `${rule.name}: ${rule.lastError ?? rule.health}`);
  });
});
