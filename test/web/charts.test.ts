/**
 * The dashboard's charts in chromium: a cluster queue's usage, jobs and admissions over time
 * follow the jobs it admits (live, without a reload); the usage page draws a bar per project
 * that ran jobs; and a retried job's page draws one bar per attempt on a time axis.
 *
 * The charts draw on a canvas, so the tests read what the page exposes beside it: each figure's
 * `data-points` and `data-total`, its legend's `data-series`/`data-value`, and its text
 * alternative (`role="img"` with an aria-label).
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { signIn, useBrowser } from '../helpers/browser.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { call, localFactoryConfig, useTestServer } from '../helpers/server.js';
import { countedRuns, scratchDir } from '../helpers/scratch.js';

const server = useTestServer({
  config: [localFactoryConfig(4), 'queueHistory:', '  sampleSeconds: 0.2', '  keep: 10m'].join('\n'),
});
const b = useBrowser();
const scratch = scratchDir('berth-web-charts-');
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The figure whose `data-chart` is `id`. */
const chart = (page: Page, id: string) => page.locator(`figure[data-chart="${id}"]`);
/** A legend entry of a chart, once it shows `value`. */
const legendValue = (page: Page, id: string, series: string, value: number | string) =>
  chart(page, id).locator(`li[data-series="${series}"][data-value="${value}"]`);

describe('a cluster queue over time', () => {
  it('draws usage, jobs and admissions that follow the jobs it admits, live', () =>
    b.withPage(async (page) => {
      const s = server();
      await signIn(page, s.url, s.adminToken);
      await page.getByRole('link', { name: 'default over time' }).click();
      await page.getByRole('heading', { name: 'Cluster queue default', level: 1 }).waitFor();
      await page.evaluate('window.__berthNoReload = true');

      const usage = chart(page, 'usage');
      await usage.getByText('Usage of cpu').waitFor();
      // The default queue's quota is this machine's CPU count (src/server/bootstrap.ts).
      const nominal = Number(
        await usage.locator('li[data-series="nominal"]').getAttribute('data-value', { timeout: 10_000 }),
      );
      assert.ok(nominal >= 1, `nominal cpu ${nominal}`);
      await legendValue(page, 'usage', 'used', 0).waitFor();
      // A text alternative with the title and the latest values, and axis titles with units (on
      // the canvas, so read from the chart's own options through its accessible summary).
      const plot = usage.getByRole('img');
      assert.match(
        (await plot.getAttribute('aria-label')) ?? '',
        /^Usage of cpu, from .* Latest: used 0 cores/,
      );
      // The queue has cpu and memory: a selector chooses.
      const resource = page.getByRole('combobox', { name: 'Resource' });
      assert.deepEqual(await resource.locator('option').allTextContents(), ['cpu', 'memory']);
      assert.equal(await chart(page, 'admissions').getAttribute('data-total'), '0');

      const gate = join(scratch, 'gate-queue');
      const jobs = [];
      for (let i = 0; i < 2; i++)
        jobs.push(
          await submit(s.api, s.adminToken, 'default', {
            script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
            requests: { cpu: '1', memory: '1Gi' },
          }),
        );
      await legendValue(page, 'usage', 'used', 2).waitFor();
      await legendValue(page, 'jobs', 'admitted', 2).waitFor();
      await legendValue(page, 'jobs', 'pending', 0).waitFor();
      await chart(page, 'admissions').and(page.locator('[data-total="2"]')).waitFor();
      assert.ok(Number(await usage.getAttribute('data-points')) > 2, 'several samples drawn');
      assert.match((await plot.getAttribute('aria-label')) ?? '', /Latest: used 2 cores/);

      // Memory, in GiB.
      await resource.selectOption('memory');
      await usage.getByText('Usage of memory').waitFor();
      await legendValue(page, 'usage', 'used', 2).waitFor();
      assert.match((await usage.locator('li[data-series="used"]').textContent()) ?? '', /used\s*2 GiB/);

      writeFileSync(gate, '');
      for (const j of jobs) await waitDone(s.api, s.adminToken, j.id);
      await legendValue(page, 'usage', 'used', 0).waitFor();
      await legendValue(page, 'jobs', 'admitted', 0).waitFor();
      assert.equal(await chart(page, 'admissions').getAttribute('data-total'), '2');
      assert.equal(await page.evaluate<unknown>('window.__berthNoReload'), true, 'the page was reloaded');
    }));

  it('says so for a queue that does not exist', () =>
    b.withPage(
      async (page) => {
        const s = server();
        await signIn(page, s.url, s.adminToken);
        await page.goto(`${s.url}/queues/nope`);
        await page.getByRole('alert').getByText('There is no cluster queue "nope".').waitFor();
      },
      { expectConsole: [/404/] },
    ));
});

describe('usage per project', () => {
  it('draws a bar for each project that ran jobs, per resource and period', () =>
    b.withPage(async (page) => {
      const s = server();
      for (const name of ['ml', 'bio']) {
        const made = await call(s.api, s.adminToken, 'POST', '/projects', { name, clusterQueue: 'default' });
        assert.equal(made.status, 201, made.text);
      }
      // ml holds four times bio's cpu for about as long.
      const ran = [
        await submit(s.api, s.adminToken, 'bio', { command: ['sleep', '0.5'], requests: { cpu: '500m' } }),
        await submit(s.api, s.adminToken, 'ml', { command: ['sleep', '0.5'], requests: { cpu: '2' } }),
      ];
      for (const j of ran) await waitDone(s.api, s.adminToken, j.id);

      await signIn(page, s.url, s.adminToken);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Usage' }).click();
      await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
      const bars = chart(page, 'usage-by-project');
      // Every project that ran jobs (default ran the other tests'), the largest first.
      await bars.and(page.locator('[data-categories*="bio"]')).waitFor();
      const categories = ((await bars.getAttribute('data-categories')) ?? '').split(',');
      assert.deepEqual([...categories].sort(), ['bio', 'default', 'ml']);
      const values = ((await bars.getAttribute('data-values')) ?? '').split(',').map(Number);
      assert.ok(
        values.every((v) => v > 0),
        `core·hours ${values.join(', ')}`,
      );
      assert.deepEqual(
        values,
        [...values].sort((x, y) => y - x),
        'largest first',
      );
      const of = (project: string) => values[categories.indexOf(project)] ?? 0;
      assert.ok(of('ml') > of('bio'), `ml ${of('ml')} core·h, bio ${of('bio')}`);
      await bars.getByText('cpu per project (core·h)').waitFor();
      assert.match(
        (await bars.getByRole('img').getAttribute('aria-label')) ?? '',
        /^cpu per project \(core·h\): \w+ [0-9.]+ core·h, \w+ [0-9.]+ core·h, \w+ [0-9.]+ core·h\.$/,
      );
      // The same figures in a table, with the totals.
      const table = page.getByRole('region', { name: 'Per project' }).getByRole('table');
      await table.getByRole('row', { name: /^ml\b/ }).waitFor();
      await table.getByRole('row', { name: /^bio\b/ }).waitFor();
      await table.getByRole('row', { name: /^Total\b/ }).waitFor();

      // Each resource the ledger names has its chart (the implicit `jobs` counts job·hours).
      const resource = page.getByRole('combobox', { name: 'Resource' });
      const resources = await resource.locator('option').allTextContents();
      assert.ok(resources.includes('cpu'), `resources: ${resources.join(', ')}`);
      for (const r of resources.filter((x) => x !== 'cpu')) {
        await resource.selectOption(r);
        await bars.getByText(new RegExp(`^${r} per project`)).waitFor();
      }
      // Other periods ask again.
      const period = page.getByRole('combobox', { name: 'Period' });
      for (const since of ['24h', '30d']) {
        await period.selectOption(since);
        await bars.and(page.locator('[data-categories*="bio"]')).waitFor();
      }
    }));
});

describe("a job's attempts on a time axis", () => {
  it('draws one row per attempt of a retried job, its run coloured by how it ended', () =>
    b.withPage(async (page) => {
      const s = server();
      // The first run fails at once; the second succeeds.
      const job = await submit(s.api, s.adminToken, 'default', {
        script: countedRuns(scratch, 'count', `[ $n -ge 2 ] || exit 4`),
        retries: 2,
        retryBackoffSeconds: 1,
      });
      assert.equal((await waitDone(s.api, s.adminToken, job.id)).state, 'succeeded');
      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/jobs/${job.id}`);
      const gantt = page.getByRole('region', { name: 'Attempts over time' });
      const rows = gantt.locator('g[data-attempt]');
      await rows.nth(1).waitFor();
      assert.equal(await rows.count(), 2);
      const attempts = [];
      for (const i of [0, 1])
        attempts.push([
          await rows.nth(i).getAttribute('data-attempt'),
          await rows.nth(i).getAttribute('data-outcome'),
        ]);
      assert.deepEqual(attempts, [
        ['1', 'retried'],
        ['2', 'succeeded'],
      ]);
      // Each attempt waited, then ran; the second's wait includes the backoff (1 s).
      for (const i of [0, 1]) {
        const row = rows.nth(i);
        for (const part of ['wait', 'start', 'run'])
          assert.equal(await row.locator(`rect[data-part="${part}"]`).count(), 1);
      }
      const waitWidth = async (i: number) =>
        (await rows.nth(i).locator('rect[data-part="wait"]').boundingBox())?.width ?? 0;
      const wait1 = await waitWidth(0);
      const wait2 = await waitWidth(1);
      assert.ok(wait2 > wait1, `the backoff makes the second wait longer (${wait1} px, ${wait2} px)`);
      const label = (await gantt.getByRole('img').getAttribute('aria-label')) ?? '';
      assert.match(label, /Attempt 1: waited [0-9.]+s, started in [0-9.]+s, ran [0-9.]+s; failed, retried\./);
      assert.match(label, /Attempt 2: .*; succeeded\./);
    }));
});
