/**
 * Job arrays in chromium: the jobs page shows an array as one row (spec, state, counts) and its
 * tasks one by one once filtered by state; the array's page lists its tasks and follows them live
 * to the end without a reload; Cancel array cancels every unfinished task; a task's page links
 * back to its array; and the submit form's Array field lands on the new array's page.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { signIn, useBrowser } from '../helpers/browser.js';
import { submit } from '../helpers/jobs.js';
import { call, localFactoryConfig, useTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

const server = useTestServer({ config: localFactoryConfig(4) }, async () => {
  const s = server();
  const admin = async (method: string, path: string, body?: unknown) => {
    const r = await call(s.api, s.adminToken, method, path, body);
    assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
  };
  // A project of its own, so that its jobs page holds the one array and nothing else.
  await admin('POST', '/cluster-queues', { name: 'sweeps', quota: { cpu: '4' } });
  await admin('POST', '/projects', { name: 'sweeps', clusterQueue: 'sweeps' });
});
const b = useBrowser();
const scratch = scratchDir('berth-web-arrays-');
after(() => rmSync(scratch, { recursive: true, force: true }));

interface Task {
  id: number;
  state: string;
  arrayId: number | null;
  arrayIndex: number | null;
}

/** A command that waits for `gate` to exist. */
const waitForGate = (gate: string) => `while [ ! -e ${gate} ]; do sleep 0.05; done`;

/** An array's tasks by index, over the API. */
async function tasksOf(project: string, id: number): Promise<Task[]> {
  const s = server();
  const r = await call<Task[]>(s.api, s.adminToken, 'GET', `/projects/${project}/jobs?array=${id}&sort=id`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** The jobs table (the one with an "ID" column header). */
const jobsTable = (page: Page): Locator =>
  page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: /^ID/ }) });
/** The array page's live regions: its status line (its state, then its counts) and the pager's. */
const statusLine = (page: Page): Locator => page.getByRole('status');

const markDocument = (page: Page) => page.evaluate('window.__berthNoReload = true');
const assertNotReloaded = async (page: Page) =>
  assert.equal(await page.evaluate<unknown>('window.__berthNoReload'), true, 'the page was reloaded');

describe('job arrays in the dashboard', () => {
  it('shows an array as one row on the jobs page, and its page follows its tasks live', () =>
    b.withPage(async (page) => {
      const s = server();
      const gate = join(scratch, 'gate-live');
      const head = await submit(s.api, s.adminToken, 'sweeps', {
        name: 'sweep',
        script: waitForGate(gate),
        array: '0-3%1',
      });
      const tasks = await tasksOf('sweeps', head.id);
      assert.deepEqual(
        tasks.map((t) => t.arrayIndex),
        [0, 1, 2, 3],
      );

      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/projects/sweeps/jobs`);
      const table = jobsTable(page);
      const arrayLink = table.getByRole('link', { name: `Array ${head.id}`, exact: true });
      await arrayLink.waitFor();
      // One row for the whole array: its spec, its state, its counts; no row for a task.
      const rows = table.locator('tbody > tr');
      assert.equal(await rows.count(), 1);
      const row = rows.first();
      await row.getByText('[0-3%1]').waitFor();
      await row.getByText(/1 running · 3 queued/).waitFor();
      await row.getByText('running', { exact: true }).waitFor();
      assert.match((await row.textContent()) ?? '', /sweep/);
      for (const t of tasks) {
        assert.equal(await table.getByRole('link', { name: String(t.id), exact: true }).count(), 0);
      }

      // Filtered by state, the tasks are jobs again, one row each.
      await page.getByRole('combobox', { name: 'State' }).selectOption('queued');
      await table.getByRole('link', { name: String(tasks[3]!.id), exact: true }).waitFor();
      await waitFor('three queued tasks listed', async () => (await rows.count()) === 3);
      await page.getByRole('combobox', { name: 'State' }).selectOption('');
      await arrayLink.waitFor();

      // The array's page: the array's facts and its 4 tasks.
      await arrayLink.click();
      await page.getByRole('heading', { name: `Array ${head.id}`, level: 1 }).waitFor();
      assert.ok(page.url().endsWith(`/arrays/${head.id}`), page.url());
      await page.getByText('at most 1 task at once').waitFor();
      const taskTable = page.getByRole('table', { name: 'Tasks' });
      for (const t of tasks) await taskTable.getByRole('link', { name: String(t.id), exact: true }).waitFor();
      assert.equal(await taskTable.locator('tbody > tr').count(), 4);
      assert.deepEqual(
        (await taskTable.locator('tbody > tr > :nth-child(1)').allTextContents()).map((c) => c.trim()),
        ['0', '1', '2', '3'],
      );
      // The waiting tasks say why.
      await taskTable
        .getByText(/waiting for its turn/)
        .first()
        .waitFor();
      await statusLine(page).getByText('1 running · 3 queued').waitFor();

      // The gate opens: the tasks run one after the other, and the page follows without a reload.
      await markDocument(page);
      writeFileSync(gate, '');
      await statusLine(page).getByText('4 succeeded', { exact: true }).waitFor({ timeout: 30_000 });
      await statusLine(page).getByText('succeeded', { exact: true }).waitFor();
      await waitFor(
        'every task row to say succeeded',
        async () => (await taskTable.getByText('succeeded', { exact: true }).count()) === 4,
      );
      assert.equal(await page.getByRole('button', { name: 'Cancel array' }).count(), 0);
      await assertNotReloaded(page);

      // Back on the jobs page, the row says so too.
      await page.getByRole('link', { name: 'sweeps', exact: true }).click();
      await jobsTable(page)
        .getByText(/4 succeeded/)
        .waitFor();
    }));

  it('cancels every unfinished task with Cancel array', () =>
    b.withPage(async (page) => {
      const s = server();
      const gate = join(scratch, 'gate-never');
      const head = await submit(s.api, s.adminToken, 'default', {
        name: 'to-cancel',
        script: waitForGate(gate),
        array: '0-2%1',
      });
      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/arrays/${head.id}`);
      await statusLine(page).getByText('1 running · 2 queued').waitFor();
      await markDocument(page);
      await page.getByRole('button', { name: 'Cancel array' }).click();
      await statusLine(page).getByText('3 cancelled', { exact: true }).waitFor({ timeout: 30_000 });
      await statusLine(page).getByText('cancelled', { exact: true }).waitFor();
      await page.getByRole('button', { name: /^Cancel/ }).waitFor({ state: 'detached' });
      const taskTable = page.getByRole('table', { name: 'Tasks' });
      await waitFor(
        'every task row to say cancelled',
        async () => (await taskTable.getByText('cancelled', { exact: true }).count()) === 3,
      );
      await assertNotReloaded(page);
      assert.deepEqual(
        (await tasksOf('default', head.id)).map((t) => t.state),
        ['cancelled', 'cancelled', 'cancelled'],
      );
    }));

  it('links a task’s job page to its array', () =>
    b.withPage(async (page) => {
      const s = server();
      const head = await submit(s.api, s.adminToken, 'default', { script: 'true', array: '5-7' });
      const task = (await tasksOf('default', head.id)).find((t) => t.arrayIndex === 7)!;
      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/jobs/${task.id}`);
      await page.getByRole('heading', { name: `Job ${task.id}`, level: 1 }).waitFor();
      const spec = page.getByRole('region', { name: 'Spec' });
      await spec.getByText(`task 7 of array ${head.id}`).waitFor();
      await spec.getByRole('link', { name: `array ${head.id}`, exact: true }).click();
      await page.getByRole('heading', { name: `Array ${head.id}`, level: 1 }).waitFor();
      await page.getByText('[5-7]').first().waitFor();
    }));

  it('submits an array from the form and opens its page', () =>
    b.withPage(
      async (page) => {
        const s = server();
        await signIn(page, s.url, s.adminToken);
        await page.goto(`${s.url}/submit`);
        await page.getByLabel('Command', { exact: true }).fill('echo "task $BERTH_ARRAY_INDEX"');
        await page.getByLabel('Name', { exact: true }).fill('from-the-form');
        // The server's word on a malformed array.
        await page.getByLabel('Array', { exact: true }).fill('3-1');
        await page.getByRole('button', { name: 'Submit', exact: true }).click();
        await page
          .getByRole('alert')
          .getByText(/array: .*ends before it starts/)
          .waitFor();

        await page.getByLabel('Array', { exact: true }).fill('0-2%2');
        await page.getByRole('button', { name: 'Submit', exact: true }).click();
        const heading = page.getByRole('heading', { name: /^Array \d+$/, level: 1 });
        await heading.waitFor();
        const id = Number(/^Array (\d+)/.exec((await heading.textContent()) ?? '')?.[1]);
        assert.ok(id > 0);
        assert.ok(page.url().endsWith(`/arrays/${id}`), page.url());
        await page.getByText('from-the-form').first().waitFor();
        await page.getByText('[0-2%2]').first().waitFor();
        await statusLine(page).getByText('3 succeeded', { exact: true }).waitFor({ timeout: 30_000 });
        const taskTable = page.getByRole('table', { name: 'Tasks' });
        await waitFor(
          'three succeeded tasks listed',
          async () => (await taskTable.getByText('succeeded', { exact: true }).count()) === 3,
        );
      },
      { expectConsole: [/status of 400/] },
    ));
});
