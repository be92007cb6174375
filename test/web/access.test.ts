/**
 * What a project member sees in the dashboard: their project, its jobs — and nothing of a
 * project they are not a member of, neither in the project switcher nor on the pages.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { signIn, useBrowser } from '../helpers/browser.js';
import { submit } from '../helpers/jobs.js';
import { call, useTestServer } from '../helpers/server.js';

let aliceToken = '';
let ownJob = 0;
let otherJob = 0;

const server = useTestServer({}, async () => {
  const s = server();
  const admin = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const r = await call<T>(s.api, s.adminToken, method, path, body);
    assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
    return r.body;
  };
  await admin('POST', '/cluster-queues', { name: 'held', quota: { cpu: '4' }, stopPolicy: 'Hold' });
  await admin('POST', '/projects', { name: 'alpha', clusterQueue: 'held', tags: ['mine'] });
  await admin('POST', '/projects', { name: 'secret', clusterQueue: 'held', tags: ['theirs'] });
  aliceToken = (await admin<{ token: string }>('POST', '/users', { name: 'alice' })).token;
  await admin('PUT', '/projects/alpha/members/alice', { role: 'member' });
  ownJob = (await submit(s.api, s.adminToken, 'alpha', { name: 'alpha-job', command: ['true'] })).id;
  otherJob = (await submit(s.api, s.adminToken, 'secret', { name: 'secret-job', command: ['true'] })).id;
});
const b = useBrowser();

describe('a project member', () => {
  it('sees only their project in the switcher, on the projects page and in the jobs', () =>
    b.withPage(async (page) => {
      const s = server();
      await signIn(page, s.url, aliceToken);
      const switcher = page.getByRole('combobox', { name: 'Project' });
      await switcher.getByRole('option', { name: 'alpha' }).waitFor({ state: 'attached' });
      const options = (await switcher.getByRole('option').allTextContents()).map((o) => o.trim());
      assert.ok(!options.some((o) => o.includes('secret')), `the switcher offers ${options.join(', ')}`);
      assert.ok(!options.includes('default'), `the switcher offers ${options.join(', ')}`);

      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Projects' }).click();
      await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
      const table = page.getByRole('table');
      await table.getByRole('link', { name: 'alpha', exact: true }).waitFor();
      const headers = (await table.getByRole('columnheader').allTextContents()).map((h) => h.trim());
      assert.deepEqual(headers, [
        'Name',
        'Queue',
        'Tags',
        'Active',
        'Queued',
        'Running',
        'Succeeded',
        'Failed',
        'Cancelled',
      ]);
      assert.equal(await table.getByText('secret').count(), 0);
      // Its job counts: the one job waits in the held queue.
      const cells = (await table.getByRole('row').nth(1).getByRole('cell').allTextContents()).map((c) =>
        c.trim(),
      );
      assert.deepEqual(
        [cells[0], cells[1], cells[4], cells[5], cells[6]],
        ['alpha', 'held', '1', '0', '0'],
        `row: ${cells.join(' | ')}`,
      );
      assert.equal(await table.getByRole('row').count(), 2, 'one header row and one project');

      await table.getByRole('link', { name: 'alpha', exact: true }).click();
      await page.getByRole('heading', { name: 'Jobs' }).first().waitFor();
      await page.getByRole('link', { name: String(ownJob), exact: true }).waitFor();
      assert.equal(await page.getByRole('link', { name: String(otherJob), exact: true }).count(), 0);
      assert.equal(await page.getByText('secret-job').count(), 0);
    }));

  it("gets no trace of another project's job from its address", () =>
    b.withPage(
      async (page) => {
        const s = server();
        await signIn(page, s.url, aliceToken);
        await page.goto(`${s.url}/jobs/${otherJob}`);
        await page.getByRole('alert').waitFor();
        assert.equal(await page.getByText('secret-job').count(), 0);
        assert.equal(await page.getByRole('button', { name: 'Cancel job' }).count(), 0);
      },
      { expectConsole: [/status of 404/] },
    ));
});
