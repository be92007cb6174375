/**
 * The dashboard's screenshots in docs/screenshots/: a server with realistic state (three queues
 * in a cohort, one borrowing, one with waiting jobs; a few projects; jobs in every state, one
 * running with log lines and a managed resource), photographed in chromium at 1280×800.
 *
 *   node --import tsx scripts/screenshots.ts
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { ensureWebBuild, launchChromium, signIn } from '../test/helpers/browser.js';
import { submit, waitDone, type JobView } from '../test/helpers/jobs.js';
import { call, startTestServer } from '../test/helpers/server.js';
import { waitFor } from '../test/helpers/wait.js';

const OUT = join(import.meta.dirname, '..', 'docs', 'screenshots');

await ensureWebBuild();
const s = await startTestServer({
  config: [
    'graceSeconds: 1',
    'heartbeatSeconds: 10',
    'factories:',
    '  local: { kind: local, capacity: 6 }',
    'targets:',
    '  local: { factory: local }',
    'resources:',
    '  licence: { kind: semaphore, capacity: 1 }',
  ].join('\n'),
});
const browser = await launchChromium();
try {
  const admin = async (method: string, path: string, body?: unknown) => {
    const r = await call(s.api, s.adminToken, method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return r.body;
  };
  // Two queues lending to each other in cohort "research" ("vision" borrows from "language"),
  // and "nightly" on its own, one job at a time, with jobs waiting.
  await admin('POST', '/cluster-queues', {
    name: 'vision',
    cohort: 'research',
    quota: { cpu: '8', memory: '32Gi', jobs: 10 },
  });
  await admin('POST', '/cluster-queues', {
    name: 'language',
    cohort: 'research',
    quota: { cpu: '8', memory: '32Gi', jobs: 10 },
  });
  await admin('POST', '/cluster-queues', { name: 'nightly', quota: { cpu: '4', memory: '8Gi', jobs: 1 } });
  for (const [name, queue, tags] of [
    ['detection', 'vision', ['gpu', 'team-a']],
    ['segmentation', 'vision', ['team-a']],
    ['translation', 'language', ['team-b']],
    ['etl', 'nightly', ['batch']],
  ] as const) {
    await admin('POST', '/projects', { name, clusterQueue: queue, tags, description: `${name} work` });
  }

  const jobs: JobView[] = [];
  const job = async (project: string, body: Record<string, unknown>) => {
    const j = await submit(s.api, s.adminToken, project, body);
    jobs.push(j);
    return j;
  };
  const state = async (id: number) => ((await admin('GET', `/jobs/${id}`)) as JobView).state;
  const running = (j: JobView) =>
    waitFor(`job ${j.id} to run`, async () => (await state(j.id)) === 'running');
  /** Prints `lines`, then runs until the end of the script cancels it. */
  const longRunning = (lines: string) => ['sh', '-c', `${lines}; exec sleep 3600`];

  // Finished: succeeded and failed.
  for (const name of ['prepare-data', 'tokenize', 'eval-baseline']) {
    await job('detection', {
      name,
      command: ['sh', '-c', `echo ${name} done`],
      requests: { cpu: '1', memory: '2Gi' },
    });
  }
  await job('detection', {
    name: 'eval-broken',
    command: ['sh', '-c', 'echo loading checkpoint; echo checkpoint not found >&2; exit 2'],
  });
  for (const j of jobs) await waitDone(s.api, s.adminToken, j.id);

  // Running: the one the job page shows, with a log and the licence; with the others, "vision"
  // uses more cpu and memory than its quota and borrows the rest from "language".
  const train = await job('detection', {
    name: 'train-resnet50',
    command: longRunning(
      'for e in 1 2 3 4 5 6; do echo "epoch $e/90  loss $((7 - e)).$((e * 37 % 100))  top1 $((e * e * 2)).$((e * 3))%"; done; ' +
        'echo "checkpoint saved: runs/resnet50/epoch-006.pt"',
    ),
    requests: { cpu: '6', memory: '24Gi' },
    resources: ['licence'],
    priority: 10,
    timeoutSeconds: 86_400,
  });
  await running(train);
  await running(
    await job('segmentation', {
      name: 'unet-sweep-3',
      command: longRunning('echo "sweep 3: lr=3e-4 batch=32"'),
      requests: { cpu: '5', memory: '12Gi' },
    }),
  );
  await running(
    await job('translation', {
      name: 'finetune-de-en',
      command: longRunning('echo "step 100  loss 2.31"'),
      requests: { cpu: '2', memory: '8Gi' },
    }),
  );
  // Admitted, waiting for the licence the running job holds.
  await job('detection', {
    name: 'export-onnx',
    command: ['sh', '-c', 'echo export'],
    resources: ['licence'],
  });
  // Queued: waiting for the training to succeed; and in "nightly", behind the running ingest.
  await job('detection', { name: 'eval-resnet50', command: ['true'], dependsOn: [train.id] });
  await running(
    await job('etl', {
      name: 'ingest-2026-11-21',
      command: longRunning('echo "ingesting 14,203 files"'),
      requests: { cpu: '2', memory: '4Gi' },
    }),
  );
  for (const day of ['22', '23', '24']) {
    await job('etl', {
      name: `ingest-2026-11-${day}`,
      command: ['true'],
      requests: { cpu: '2', memory: '4Gi' },
    });
  }
  // Cancelled.
  const cancelled = await job('detection', {
    name: 'sweep-lr-1e-2',
    command: ['true'],
    dependsOn: [train.id],
  });
  await admin('POST', `/jobs/${cancelled.id}/cancel`);

  mkdirSync(OUT, { recursive: true });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await signIn(page, s.url, s.adminToken);

  /** Waits for what the picture should show; says so (and shoots anyway) when it does not come. */
  const expectShown = async (what: string, locator: Locator) => {
    try {
      await locator.waitFor({ timeout: 10_000 });
    } catch {
      problems.push(`not shown within 10 s: ${what}`);
    }
  };
  const shoot = async (p: Page, file: string) => {
    await p.evaluate('document.fonts.ready');
    await p.screenshot({ path: join(OUT, file) });
    console.log(`docs/screenshots/${file}`);
  };

  await page.goto(s.url + '/');
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  await expectShown('the meter "vision cpu"', page.getByRole('meter', { name: 'vision cpu' }));
  await expectShown(
    '"3 pending" (queue nightly)',
    page.getByRole('region', { name: 'nightly' }).getByText('3 pending'),
  );
  await expectShown('borrowing in queue vision', page.getByText(/borrowed/).first());
  await shoot(page, 'overview.png');

  await page.goto(`${s.url}/jobs/${train.id}`);
  await page.getByRole('heading', { name: new RegExp(`Job ${train.id}`), level: 1 }).waitFor();
  await page
    .getByRole('log', { name: 'Log' })
    .getByText(/checkpoint saved/)
    .waitFor();
  await shoot(page, 'job.png');

  await page.goto(`${s.url}/projects/detection/jobs`);
  await page.getByRole('heading', { name: 'Jobs' }).waitFor();
  await expectShown('the running job', page.getByRole('link', { name: String(train.id), exact: true }));
  await shoot(page, 'jobs.png');

  await context.close();
  // Nothing may outlive the server: every job still going is cancelled and its worker removed.
  for (const j of jobs) {
    if (!['succeeded', 'failed', 'cancelled'].includes(await state(j.id))) {
      await call(s.api, s.adminToken, 'POST', `/jobs/${j.id}/cancel`);
    }
  }
  for (const j of jobs) await waitDone(s.api, s.adminToken, j.id);
  if (problems.length > 0) console.error(`console problems:\n  ${problems.join('\n  ')}`);
} finally {
  await browser.close();
  await s.close();
}
