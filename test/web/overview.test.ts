/**
 * The overview in chromium: a queue's bars follow its usage live — up while a job runs, down
 * when it ends — and the factories' and resource types' tables show the pools.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { signIn, useBrowser } from '../helpers/browser.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { call, useTestServer } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';

const server = useTestServer({
  config: [
    'graceSeconds: 1',
    'heartbeatSeconds: 10',
    'factories:',
    '  local: { kind: local, capacity: 3 }',
    'targets:',
    '  local: { factory: local }',
    'resources:',
    '  licence: { kind: semaphore, capacity: 2 }',
  ].join('\n'),
});
const b = useBrowser();
const scratch = scratchDir('berth-web-overview-');
after(() => rmSync(scratch, { recursive: true, force: true }));

describe('the overview', () => {
  it("moves the default queue's cpu bar while a job runs, without a reload", () =>
    b.withPage(async (page) => {
      const s = server();
      await signIn(page, s.url, s.adminToken);
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      // The header says which replica this is: a server alone leads (on either store).
      const replica = page.locator('header .replica');
      await replica.waitFor();
      assert.match((await replica.textContent()) ?? '', /^leader · term \d+$/);
      assert.match((await replica.getAttribute('title')) ?? '', /runs the scheduler/);
      const queue = page.getByRole('region', { name: 'default' });
      const cpu = page.getByRole('meter', { name: 'default cpu' });
      // The default queue's quota is this machine's CPU count (src/server/bootstrap.ts).
      await cpu.and(page.locator('[aria-valuenow="0"]')).waitFor();
      const max = Number(await cpu.getAttribute('aria-valuemax'));
      assert.ok(max >= 1, `aria-valuemax of "default cpu" is ${max}`);
      await page.evaluate('window.__berthNoReload = true');

      const gate = join(scratch, 'gate-cpu');
      const job = await submit(s.api, s.adminToken, 'default', {
        script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
        requests: { cpu: '1' },
        resources: ['licence'],
      });
      await cpu.and(page.locator('[aria-valuenow="1"]')).waitFor();
      assert.match((await cpu.textContent()) ?? '', new RegExp(`cpu\\s*1\\s*/\\s*${max}`));
      await queue.getByText(/\b1 running\b/).waitFor();
      const licence = page
        .getByRole('region', { name: 'Resource types' })
        .getByRole('row')
        .filter({ has: page.getByRole('cell', { name: 'licence', exact: true }) });
      await licence.getByRole('cell', { name: '1', exact: true }).first().waitFor();

      writeFileSync(gate, '');
      await waitDone(s.api, s.adminToken, job.id);
      await cpu.and(page.locator('[aria-valuenow="0"]')).waitFor();
      await queue.getByText(/\b0 running\b/).waitFor();
      assert.equal(await page.evaluate<unknown>('window.__berthNoReload'), true, 'the page was reloaded');
    }));

  it('shows queues made later, and counts the pending jobs of a held one', () =>
    b.withPage(async (page) => {
      const s = server();
      // Made after the first test's page has come and gone: the overview must still learn of it.
      const created = await call(s.api, s.adminToken, 'POST', '/cluster-queues', {
        name: 'paused',
        quota: { cpu: '4', jobs: 2 },
        stopPolicy: 'Hold',
      });
      assert.equal(created.status, 201, created.text);
      const project = await call(s.api, s.adminToken, 'POST', '/projects', {
        name: 'paused',
        clusterQueue: 'paused',
      });
      assert.equal(project.status, 201, project.text);
      await signIn(page, s.url, s.adminToken);
      const queue = page.getByRole('region', { name: 'paused' });
      await queue.getByText(/\b0 pending\b/).waitFor();
      await page.getByRole('meter', { name: 'paused jobs' }).waitFor();
      for (let i = 0; i < 3; i++) await submit(s.api, s.adminToken, 'paused', { command: ['true'] });
      await queue.getByText(/\b3 pending\b/).waitFor();
      // And one made while the page is open appears without a reload.
      await call(s.api, s.adminToken, 'POST', '/cluster-queues', { name: 'later', quota: { cpu: '1' } });
      await page.getByRole('meter', { name: 'later cpu' }).waitFor();
    }));

  it('lists the factories and the resource types with their figures', () =>
    b.withPage(async (page) => {
      const s = server();
      await signIn(page, s.url, s.adminToken);
      for (const [section, name, capacity] of [
        ['Factories', 'local', '3'],
        ['Resource types', 'licence', '2'],
      ] as const) {
        const region = page.getByRole('region', { name: section });
        const table = region.getByRole('table');
        await table.waitFor();
        const headers = await table.getByRole('columnheader').allTextContents();
        assert.deepEqual(
          headers.map((h) => h.trim()).slice(0, 4),
          ['Name', 'Capacity', 'In use', 'Waiting'],
          `${section} columns`,
        );
        const row = table.getByRole('row').filter({ has: page.getByRole('cell', { name, exact: true }) });
        const cells = (await row.getByRole('cell').allTextContents()).map((c) => c.trim());
        assert.equal(cells[1], capacity, `${section}: capacity of ${name}`);
      }
    }));
});
