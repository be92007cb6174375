/**
 * A job's life in chromium, without reloading: submitted from the form, its log appears line by
 * line while it runs, it ends succeeded; another is cancelled from its page and shows it live.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { signIn, useBrowser } from '../helpers/browser.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { call, localFactoryConfig, useTestServer } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';

const server = useTestServer({
  config: [
    localFactoryConfig(4),
    '  batch: { factory: local }',
    'resources:',
    '  licence: { kind: semaphore, capacity: 2 }',
  ].join('\n'),
});
const b = useBrowser();
const scratch = scratchDir('berth-web-job-');
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The job page's status line (role status: the state as text, then the reason) showing `state`. */
const stateOf = (page: Page, state: string) => page.getByRole('status').getByText(state, { exact: true });

/** Marks the document; `assertNotReloaded` fails if a reload (or full navigation) dropped it. */
const markDocument = (page: Page) => page.evaluate('window.__berthNoReload = true');
const assertNotReloaded = async (page: Page) =>
  assert.equal(await page.evaluate<unknown>('window.__berthNoReload'), true, 'the page was reloaded');

describe('a job in the dashboard', () => {
  it('is submitted from the form, streams its log live and ends succeeded', () =>
    b.withPage(async (page) => {
      const s = server();
      const gate = join(scratch, 'gate-submit');
      await signIn(page, s.url, s.adminToken);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Submit' }).click();
      await page.getByRole('heading', { name: 'Submit a job' }).waitFor();
      await markDocument(page);
      const command = `echo first-line; while [ ! -e ${gate} ]; do sleep 0.05; done; echo second-line`;
      await page.getByLabel('Command', { exact: true }).fill(command);
      await page.getByLabel('Name', { exact: true }).fill('from-the-form');
      await page.getByLabel('Requests', { exact: true }).fill('cpu=1');
      await page.getByLabel('Priority', { exact: true }).fill('5');
      await page.getByRole('combobox', { name: 'Target' }).selectOption('batch');
      await page.getByRole('group', { name: 'Resources' }).getByRole('checkbox', { name: 'licence' }).check();
      await page.getByRole('button', { name: 'Submit', exact: true }).click();

      const heading = page.getByRole('heading', { name: /^Job \d+/, level: 1 });
      await heading.waitFor();
      const id = Number(/^Job (\d+)/.exec((await heading.textContent()) ?? '')?.[1]);
      assert.ok(id > 0);
      assert.ok(page.url().endsWith(`/jobs/${id}`), page.url());
      await page.getByText('from-the-form').first().waitFor();
      // What the form sent: the command line as sh -c, and every field.
      const job = await call<{
        command: string[];
        requests: Record<string, string>;
        priority: number;
        target: string;
        resources: { type: string }[];
      }>(s.api, s.adminToken, 'GET', `/jobs/${id}`);
      assert.deepEqual(job.body.command, ['sh', '-c', command]);
      assert.deepEqual(job.body.requests, { cpu: '1' });
      assert.equal(job.body.priority, 5);
      assert.equal(job.body.target, 'batch');
      assert.deepEqual(
        job.body.resources.map((r) => r.type),
        ['licence'],
      );

      const log = page.getByRole('log', { name: 'Log' });
      await log.getByText(/first-line/).waitFor();
      await stateOf(page, 'running').waitFor();
      assert.doesNotMatch((await log.textContent()) ?? '', /second-line/);
      assert.equal(await page.getByRole('button', { name: 'Cancel job' }).isVisible(), true);

      writeFileSync(gate, '');
      await log.getByText(/second-line/).waitFor();
      await stateOf(page, 'succeeded').waitFor();
      assert.match((await log.textContent()) ?? '', /first-line\s*\n\s*second-line/);
      await page.getByRole('button', { name: 'Cancel job' }).waitFor({ state: 'detached' });
      for (const section of ['Spec', 'Timeline', 'Resources', 'Worker', 'Log']) {
        await page.getByRole('heading', { name: section, exact: true }).waitFor();
      }
      const timeline = page.getByRole('region', { name: 'Timeline' }).getByRole('list');
      await timeline.getByRole('listitem').filter({ hasText: 'submitted' }).waitFor();
      await timeline.getByRole('listitem').filter({ hasText: 'succeeded' }).waitFor();
      await assertNotReloaded(page);
    }));

  it("submits a gang from the form: its page shows the workers, and each rank's labelled output", () =>
    b.withPage(async (page) => {
      const s = server();
      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/submit`);
      await page.getByLabel('Command', { exact: true }).fill('echo "hello from $BERTH_RANK"');
      await page.getByLabel('Workers', { exact: true }).fill('2');
      await page.getByRole('button', { name: 'Submit', exact: true }).click();
      await page.getByRole('heading', { name: /^Job \d+/, level: 1 }).waitFor();
      await stateOf(page, 'succeeded').waitFor();
      await page.getByText('2, all at once (a gang: ranks 0–1)').waitFor();
      const log = page.getByRole('log', { name: 'Log' });
      await log.getByText('0: hello from 0').waitFor();
      await log.getByText('1: hello from 1').waitFor();
    }));

  it('shows the server message when the form is refused, and keeps the input', () =>
    b.withPage(
      async (page) => {
        const s = server();
        await signIn(page, s.url, s.adminToken);
        await page.goto(`${s.url}/submit`);
        await page.getByLabel('Command', { exact: true }).fill('echo kept');
        await page.getByLabel('Requests', { exact: true }).fill('cpu=lots');
        await page.getByRole('button', { name: 'Submit', exact: true }).click();
        // The alert says what the server says to the same request.
        const refused = await call<{ error: { message: string } }>(
          s.api,
          s.adminToken,
          'POST',
          '/projects/default/jobs',
          { command: ['sh', '-c', 'echo kept'], requests: { cpu: 'lots' } },
        );
        assert.equal(refused.status, 400);
        await page.getByRole('alert').filter({ hasText: refused.body.error.message }).waitFor();
        assert.equal(await page.getByLabel('Command', { exact: true }).inputValue(), 'echo kept');
        assert.equal(await page.getByLabel('Requests', { exact: true }).inputValue(), 'cpu=lots');
        assert.ok(page.url().endsWith('/submit'));
      },
      { expectConsole: [/status of 400/] },
    ));

  it('is cancelled from its page, and the page shows it live', () =>
    b.withPage(async (page) => {
      const s = server();
      const job = await submit(s.api, s.adminToken, 'default', {
        name: 'sleeper',
        command: ['sleep', '300'],
      });
      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/jobs/${job.id}`);
      await page.getByRole('heading', { name: new RegExp(`^Job ${job.id}\\b`), level: 1 }).waitFor();
      await stateOf(page, 'running').waitFor();
      await markDocument(page);
      page.once('dialog', (d) => void d.accept());
      await page.getByRole('button', { name: 'Cancel job' }).click();
      await stateOf(page, 'cancelled').waitFor();
      await page
        .getByText(/cancelled by admin/)
        .first()
        .waitFor();
      await page.getByRole('button', { name: 'Cancel job' }).waitFor({ state: 'detached' });
      assert.equal((await waitDone(s.api, s.adminToken, job.id)).state, 'cancelled');
      await assertNotReloaded(page);
    }));
});
