/**
 * The jobs page in chromium: 120 jobs waiting in a held queue, paged 50 at a time with a status
 * line, sorted by id or priority through the column headers, filtered by state, updated live;
 * and at 360 px wide the table scrolls inside its container, never the page.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { documentScrollWidth, signIn, useBrowser } from '../helpers/browser.js';
import { submit } from '../helpers/jobs.js';
import { call, useTestServer } from '../helpers/server.js';

const JOBS = 120;
/** Job ids in submission order; priority of job i is i % 7. */
let ids: number[] = [];

const server = useTestServer({}, async () => {
  const s = server();
  const admin = async (method: string, path: string, body?: unknown) => {
    const r = await call(s.api, s.adminToken, method, path, body);
    assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
  };
  // On Hold, nothing is admitted: every job stays queued, and the list stays put.
  await admin('POST', '/cluster-queues', { name: 'held', quota: { cpu: '4' }, stopPolicy: 'Hold' });
  await admin('POST', '/projects', { name: 'batch', clusterQueue: 'held' });
  // One by one (about half a second), so that ids and priorities keep the submission order.
  ids = [];
  for (let i = 0; i < JOBS; i++) {
    ids.push(
      (await submit(s.api, s.adminToken, 'batch', { name: `job-${i}`, command: ['true'], priority: i % 7 }))
        .id,
    );
  }
});
const b = useBrowser();

const newest = () => ids[ids.length - 1]!;
const url = () => `${server().url}/projects/batch/jobs`;

/** The jobs table (the one with an "ID" column header). */
const jobsTable = (page: Page): Locator =>
  page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: /^ID/ }) });

async function headersOf(table: Locator): Promise<string[]> {
  return (await table.getByRole('columnheader').allTextContents()).map((h) => h.replace(/[▲▼↕]/g, '').trim());
}

/** The texts of one column's cells, top to bottom. */
async function column(table: Locator, name: string): Promise<string[]> {
  const headers = await headersOf(table);
  const i = headers.indexOf(name);
  assert.ok(i >= 0, `no "${name}" column in ${headers.join(', ')}`);
  return (await table.locator(`tbody > tr > :nth-child(${i + 1})`).allTextContents()).map((c) => c.trim());
}

const status = (page: Page, text: RegExp) => page.getByText(text).first();
const range = (from: number, to: number, of: number) =>
  new RegExp(`${from}\\s*[–-]\\s*${to}\\s+of\\s+${of.toLocaleString('en-US')}`);

describe('the jobs page', () => {
  it('pages 50 at a time, newest first, with Next page and Previous page', () =>
    b.withPage(async (page) => {
      await signIn(page, server().url, server().adminToken);
      await page.goto(url());
      await page.getByRole('heading', { name: 'Jobs' }).first().waitFor();
      const table = jobsTable(page);
      await status(page, range(1, 50, JOBS)).waitFor();
      const headers = await headersOf(table);
      for (const h of ['ID', 'Name', 'State', 'Reason', 'Position', 'Age', 'Duration']) {
        assert.ok(headers.includes(h), `column ${h} missing from ${headers.join(', ')}`);
      }
      await table.getByRole('link', { name: String(newest()), exact: true }).waitFor();
      let shown = (await column(table, 'ID')).map(Number);
      assert.deepEqual(shown, ids.slice(-50).reverse());
      const previous = page.getByRole('button', { name: 'Previous page' });
      assert.ok(await previous.isDisabled(), 'Previous page is enabled on the first page');

      await page.getByRole('button', { name: 'Next page' }).click();
      await status(page, range(51, 100, JOBS)).waitFor();
      await table.getByRole('link', { name: String(ids[JOBS - 51]), exact: true }).waitFor();
      shown = (await column(table, 'ID')).map(Number);
      assert.deepEqual(shown, ids.slice(JOBS - 100, JOBS - 50).reverse());

      await page.getByRole('button', { name: 'Next page' }).click();
      await status(page, range(101, JOBS, JOBS)).waitFor();
      await table.getByRole('link', { name: String(ids[0]), exact: true }).waitFor();
      assert.deepEqual((await column(table, 'ID')).map(Number), ids.slice(0, JOBS - 100).reverse());
      assert.ok(
        await page.getByRole('button', { name: 'Next page' }).isDisabled(),
        'Next page on the last page',
      );

      await previous.click();
      await status(page, range(51, 100, JOBS)).waitFor();
      await table.getByRole('link', { name: String(ids[JOBS - 51]), exact: true }).waitFor();
      await previous.click();
      await status(page, range(1, 50, JOBS)).waitFor();
      await table.getByRole('link', { name: String(newest()), exact: true }).waitFor();

      // Each ID links to the job's page.
      await table.getByRole('link', { name: String(newest()), exact: true }).click();
      await page.getByRole('heading', { name: new RegExp(`^Job ${newest()}\\b`), level: 1 }).waitFor();
    }));

  it('sorts by ID and by priority from the column headers', () =>
    b.withPage(async (page) => {
      await signIn(page, server().url, server().adminToken);
      await page.goto(url());
      const table = jobsTable(page);
      await table.getByRole('link', { name: String(newest()), exact: true }).waitFor();
      const idHeader = table.getByRole('columnheader', { name: /^ID/ });
      assert.equal(await idHeader.getAttribute('aria-sort'), 'descending');

      await idHeader.getByRole('button').click();
      await table.getByRole('link', { name: String(ids[0]), exact: true }).waitFor();
      assert.equal(await idHeader.getAttribute('aria-sort'), 'ascending');
      assert.deepEqual((await column(table, 'ID')).map(Number), ids.slice(0, 50));

      const priorityHeader = table.getByRole('columnheader', { name: /^Priority/ });
      await priorityHeader.getByRole('button').click();
      await priorityHeader.and(page.locator('[aria-sort="descending"], [aria-sort="ascending"]')).waitFor();
      const direction = await priorityHeader.getAttribute('aria-sort');
      assert.equal(await idHeader.getAttribute('aria-sort'), 'none');
      const expected = direction === 'descending' ? '6' : '0';
      // All 17 jobs of priority 6 (or 18 of priority 0) are on the first page, whatever the order
      // among equals; the newest of them is not on the page sorted by ascending ID.
      await table
        .getByRole('link', { name: String(direction === 'descending' ? ids[118] : ids[119]), exact: true })
        .waitFor();
      const priorities = await column(table, 'Priority');
      assert.ok(priorities.length > 0);
      assert.ok(
        priorities.slice(0, 17).every((p) => p === expected),
        `first page sorted ${direction} by priority: ${priorities.join(' ')}`,
      );
      const sorted = [...priorities].sort((x, y) => (direction === 'descending' ? +y - +x : +x - +y));
      assert.deepEqual(priorities, sorted);
      await page.getByRole('button', { name: 'Next page' }).click();
      await status(page, range(51, 100, JOBS)).waitFor();
    }));

  it('filters by state, and updates a row live when its job changes', () =>
    b.withPage(async (page) => {
      const s = server();
      await signIn(page, s.url, s.adminToken);
      await page.goto(url());
      const table = jobsTable(page);
      await table.getByRole('link', { name: String(newest()), exact: true }).waitFor();
      const row = table.getByRole('row').filter({
        has: page.getByRole('link', { name: String(newest()), exact: true }),
      });
      await row.getByText('queued', { exact: true }).waitFor();
      assert.equal((await call(s.api, s.adminToken, 'POST', `/jobs/${newest()}/cancel`)).status, 200);
      await row.getByText('cancelled', { exact: true }).waitFor();

      const filter = page.getByRole('combobox', { name: 'State' });
      const options = (await filter.getByRole('option').allTextContents()).map((o) => o.trim());
      assert.deepEqual(options[0], 'All');
      for (const st of ['queued', 'running', 'succeeded', 'failed', 'cancelled']) {
        assert.ok(options.includes(st), `State has no option "${st}": ${options.join(', ')}`);
      }
      await filter.selectOption('cancelled');
      await status(page, range(1, 1, 1)).waitFor();
      assert.deepEqual((await column(table, 'ID')).map(Number), [newest()]);
      await filter.selectOption('queued');
      await status(page, range(1, 50, JOBS - 1)).waitFor();
      await table.getByRole('link', { name: String(ids[JOBS - 2]), exact: true }).waitFor();
      assert.ok((await column(table, 'State')).every((st) => st === 'queued'));
    }));

  it('at 360 px wide scrolls the table inside its container, not the page', () =>
    b.withPage(
      async (page) => {
        await signIn(page, server().url, server().adminToken);
        await page.goto(url());
        const table = jobsTable(page);
        await table.getByRole('link', { name: String(newest()), exact: true }).waitFor();
        const width = await documentScrollWidth(page);
        assert.ok(width <= 361, `the page is ${width} px wide at a 360 px viewport`);
        // The nearest ancestor of the (only) table that scrolls sideways.
        const scrolls = await page.evaluate<{ container: string; scrollWidth: number; clientWidth: number }>(
          `(() => {
            let el = document.querySelector('table').parentElement;
            while (el && el !== document.body && !['auto', 'scroll'].includes(getComputedStyle(el).overflowX)) {
              el = el.parentElement;
            }
            return el && el !== document.body
              ? { container: el.className || el.tagName, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth }
              : { container: '', scrollWidth: 0, clientWidth: 0 };
          })()`,
        );
        assert.ok(scrolls.container !== '', 'the table has no horizontally scrolling container');
        assert.ok(
          scrolls.scrollWidth > scrolls.clientWidth,
          `the table fits in ${scrolls.clientWidth} px: nothing to scroll (${JSON.stringify(scrolls)})`,
        );
        // The controls stay usable.
        await page.getByRole('button', { name: 'Next page' }).click();
        await status(page, range(51, 100, JOBS)).waitFor();
        assert.ok((await documentScrollWidth(page)) <= 361);

        // Nor does any other page scroll sideways, once its content is in.
        const pages: [string, Locator][] = [
          ['/', page.getByRole('meter', { name: 'held cpu' })],
          ['/projects', page.getByRole('link', { name: 'batch', exact: true })],
          ['/submit', page.getByLabel('Command', { exact: true })],
          [`/jobs/${ids[0]}`, page.getByRole('heading', { name: 'Timeline' })],
        ];
        for (const [path, content] of pages) {
          await page.goto(server().url + path);
          await content.waitFor();
          const w = await documentScrollWidth(page);
          assert.ok(w <= 361, `${path} is ${w} px wide at a 360 px viewport`);
        }
      },
      { viewport: { width: 360, height: 740 } },
    ));
});
