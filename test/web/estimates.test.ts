/**
 * Start-time estimates on the job page, in chromium: a job waiting behind one that holds its
 * queue's whole quota shows when it is expected to start (the holder's timeout) and how that was
 * worked out; holding the queue turns it into "none" and why, live; once the job runs it is gone.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { signIn, useBrowser } from '../helpers/browser.js';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { call, localFactoryConfig, useTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

const server = useTestServer({ config: localFactoryConfig(4) });
const b = useBrowser();
const scratch = scratchDir('berth-web-estimates-');
after(() => rmSync(scratch, { recursive: true, force: true }));
/** Every gate a test made, opened after each test so that a failed one leaves no job waiting. */
const gates: string[] = [];
afterEach(() => gates.forEach((g) => writeFileSync(g, '')));

interface Estimated {
  id: number;
  state: string;
  startedAt: string | null;
  estimatedStartAt: string | null;
  estimate: string | null;
}

const admin = async (method: string, path: string, body?: unknown) => {
  const s = server();
  const r = await call(s.api, s.adminToken, method, path, body);
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
};

/** A cluster queue of one core, and a project of the same name bound to it. */
async function queue(name: string): Promise<void> {
  await admin('POST', '/cluster-queues', { name, quota: { cpu: '1' } });
  await admin('POST', '/projects', { name, clusterQueue: name });
}

/** A job holding the queue's one core until `gate` exists, with a 10-minute timeout; once running. */
async function holder(project: string, gate: string): Promise<Estimated> {
  const s = server();
  gates.push(gate);
  const j = await submit(s.api, s.adminToken, project, {
    name: 'holder',
    script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
    requests: { cpu: '1' },
    timeoutSeconds: 600,
  });
  return waitFor(`job ${j.id} to run`, async () => {
    const v = (await getJob(s.api, s.adminToken, j.id)) as unknown as Estimated;
    return v.state === 'running' ? v : undefined;
  });
}

/** The job page's "Estimated start" fact (its value). */
const estimatedStart = (page: Page): Locator =>
  page
    .getByRole('region', { name: 'Spec' })
    .locator('dl > div')
    .filter({ has: page.locator('dt', { hasText: /^Estimated start$/ }) })
    .locator('dd');

const stateOf = (page: Page, state: string) => page.getByRole('status').getByText(state, { exact: true });
const markDocument = (page: Page) => page.evaluate('window.__berthNoReload = true');
const assertNotReloaded = async (page: Page) =>
  assert.equal(await page.evaluate<unknown>('window.__berthNoReload'), true, 'the page was reloaded');

describe('start-time estimates on the job page', () => {
  it('shows when a waiting job should start and how that was estimated, until it runs', () =>
    b.withPage(async (page) => {
      const s = server();
      await queue('est');
      const gate = join(scratch, 'gate-est');
      const held = await holder('est', gate);
      const waiting = await submit(s.api, s.adminToken, 'est', {
        name: 'waiting',
        command: ['true'],
        requests: { cpu: '1' },
      });
      const view = (await getJob(s.api, s.adminToken, waiting.id)) as unknown as Estimated;
      assert.equal(view.state, 'queued');
      assert.ok(view.estimatedStartAt !== null && view.estimate !== null, JSON.stringify(view));

      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/jobs/${waiting.id}`);
      await page.getByRole('heading', { name: new RegExp(`^Job ${waiting.id}\\b`), level: 1 }).waitFor();
      await markDocument(page);
      const fact = estimatedStart(page);
      await fact.waitFor();

      // The holder's timeout, from when it started: about 10 minutes ahead, and the time itself.
      const time = fact.locator('time');
      const at = Date.parse((await time.getAttribute('datetime')) ?? '');
      const expected = Date.parse(held.startedAt ?? '') + 600_000;
      assert.ok(Math.abs(at - expected) < 2_000, `estimated ${new Date(at).toISOString()}`);
      const ahead = Math.round((at - Date.now()) / 60_000);
      assert.ok(ahead === 9 || ahead === 10, `${ahead} min ahead`);
      assert.match((await time.textContent()) ?? '', /^in about (9|10) min \(.*\d[:.]\d\d.*\)$/);
      // How it was made, beside it, in plain text.
      const how = fact.locator('small');
      assert.equal((await how.textContent())?.trim(), view.estimate);
      assert.match(view.estimate, /^an estimate: .*from timeouts/);

      writeFileSync(gate, '');
      await stateOf(page, 'succeeded').waitFor({ timeout: 30_000 });
      await fact.waitFor({ state: 'detached' });
      assert.equal(await page.getByText(/from timeouts/).count(), 0);
      assert.equal(await page.getByText('Estimated start').count(), 0);
      assert.equal((await waitDone(s.api, s.adminToken, waiting.id)).state, 'succeeded');
      await assertNotReloaded(page);
    }));

  it('says "none" and why while the queue is on hold, live, and shows the estimate again on resume', () =>
    b.withPage(async (page) => {
      const s = server();
      await queue('lab');
      const gate = join(scratch, 'gate-lab');
      await holder('lab', gate);
      const waiting = await submit(s.api, s.adminToken, 'lab', { command: ['true'], requests: { cpu: '1' } });

      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/jobs/${waiting.id}`);
      const fact = estimatedStart(page);
      await fact.locator('time').waitFor();
      await markDocument(page);

      await admin('PATCH', '/cluster-queues/lab', { stopPolicy: 'Hold' });
      await fact.getByText('none', { exact: true }).waitFor();
      await fact.getByText('not estimated: queue lab is on hold, it admits nothing until resumed').waitFor();
      assert.equal(await fact.locator('time').count(), 0);

      await admin('PATCH', '/cluster-queues/lab', { stopPolicy: 'None' });
      await fact.locator('time').waitFor();
      await fact.getByText(/^an estimate: .*from timeouts/).waitFor();

      writeFileSync(gate, '');
      await stateOf(page, 'succeeded').waitFor({ timeout: 30_000 });
      await fact.waitFor({ state: 'detached' });
      await assertNotReloaded(page);
    }));
});
