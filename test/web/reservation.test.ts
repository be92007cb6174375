/**
 * Backfill reservations on the job page, in chromium (issue #31): in a Backfill queue a wide job
 * that does not fit shows the reservation it holds (when, and what of the queue); a job that fits
 * now but would delay it shows whose reservation it waits for, with a link to that job. Once the
 * quota is free the wide job starts and its reservation is gone. The status banner says the
 * reservation's time as a person reads it (issue #45).
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { personTime } from '../../src/domain/reason-times.js';
import { signIn, useBrowser } from '../helpers/browser.js';
import { getJob, submit } from '../helpers/jobs.js';
import { call, localFactoryConfig, useTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

const server = useTestServer({ config: localFactoryConfig(4) });
const b = useBrowser();
const scratch = scratchDir('berth-web-reservation-');
after(() => rmSync(scratch, { recursive: true, force: true }));
const gates: string[] = [];
afterEach(() => gates.forEach((g) => writeFileSync(g, '')));

interface View {
  id: number;
  state: string;
  startedAt: string | null;
}

const admin = async (method: string, path: string, body?: unknown) => {
  const s = server();
  const r = await call(s.api, s.adminToken, method, path, body);
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
};

/** The job page's "Reservation" fact (its value). */
const reservation = (page: Page): Locator =>
  page
    .getByRole('region', { name: 'Spec' })
    .locator('dl > div')
    .filter({ has: page.locator('dt', { hasText: /^Reservation$/ }) })
    .locator('dd');

describe('backfill reservations on the job page', () => {
  it('shows the reservation a wide job holds, and the one a job that would delay it waits for', () =>
    b.withPage(async (page) => {
      const s = server();
      await admin('POST', '/cluster-queues', {
        name: 'bf',
        quota: { cpu: '2' },
        queueingStrategy: 'Backfill',
      });
      await admin('POST', '/projects', { name: 'bf', clusterQueue: 'bf' });
      // Holds 1 of the 2 cpu until the gate opens; by its timeout, 10 minutes.
      const gate = join(scratch, 'gate-bf');
      gates.push(gate);
      const held = await submit(s.api, s.adminToken, 'bf', {
        name: 'holder',
        script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
        requests: { cpu: '1' },
        timeoutSeconds: 600,
      });
      const running = await waitFor(`job ${held.id} to run`, async () => {
        const v = (await getJob(s.api, s.adminToken, held.id)) as unknown as View;
        return v.state === 'running' ? v : undefined;
      });
      // Wants both: reserved for when the holder's timeout is up.
      const wide = await submit(s.api, s.adminToken, 'bf', {
        name: 'wide',
        command: ['true'],
        requests: { cpu: '2' },
        timeoutSeconds: 60,
      });
      // Fits the free cpu, but would still hold it then: it waits for the wide job.
      const long = await submit(s.api, s.adminToken, 'bf', {
        name: 'long',
        command: ['true'],
        requests: { cpu: '1' },
        timeoutSeconds: 3600,
      });

      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/jobs/${wide.id}`);
      const own = reservation(page);
      await own.waitFor();
      const time = own.locator('time');
      const at = Date.parse((await time.getAttribute('datetime')) ?? '');
      const expected = Date.parse(running.startedAt ?? '') + 600_000;
      assert.ok(Math.abs(at - expected) < 5_000, `reserved at ${new Date(at).toISOString()}`);
      assert.match(
        (await own.textContent()) ?? '',
        /^reserved to start in about (9|10) min: cpu=2 of queue bf/,
      );

      // The status banner says the same reservation for a person (issue #45): the browser's zone,
      // how far off, no ISO text.
      const banner = (await page.locator('.status-line .reason').textContent()) ?? '';
      const clock = personTime(at, Date.now()).replace(/ \(.*$/, '');
      assert.match(
        banner,
        new RegExp(`^reserved to start at ${clock} \\(in (9|10)m\\d*s?\\): cpu 2 of queue bf, `),
      );
      assert.doesNotMatch(banner, /\d{4}-\d\d-\d\dT/);

      await page.goto(`${s.url}/jobs/${long.id}`);
      const other = reservation(page);
      await other.waitFor();
      assert.match(
        (await other.textContent()) ?? '',
        new RegExp(`^waiting for job ${wide.id}, reserved to start in about (9|10) min: cpu=2 of queue bf`),
      );
      assert.equal(Date.parse((await other.locator('time').getAttribute('datetime')) ?? ''), at);
      await other.getByRole('link', { name: `job ${wide.id}` }).click();
      await page.getByRole('heading', { name: new RegExp(`^Job ${wide.id}\\b`), level: 1 }).waitFor();

      // The holder ends: the wide job starts, and holds no reservation any more.
      writeFileSync(gate, '');
      await waitFor(`job ${wide.id} to start`, async () => {
        const v = (await getJob(s.api, s.adminToken, wide.id)) as unknown as View;
        return v.state !== 'queued' ? v : undefined;
      });
      await reservation(page).waitFor({ state: 'detached', timeout: 30_000 });
    }));
});
