/**
 * A retried job's attempts in chromium: the job page, open while the job waits out its backoff,
 * says when it comes back; once the job has run again, it lists each attempt with how it ended
 * and what it was charged to, and shows one attempt's own output.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { signIn, useBrowser } from '../helpers/browser.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { localFactoryConfig, useTestServer } from '../helpers/server.js';
import { countedRuns, scratchDir } from '../helpers/scratch.js';

const server = useTestServer({ config: localFactoryConfig(2) });
const b = useBrowser();
const scratch = scratchDir('berth-web-attempts-');
after(() => rmSync(scratch, { recursive: true, force: true }));

describe('attempts on the job page', () => {
  it('lists each attempt with its outcome and charge, and shows one attempt’s output', () =>
    b.withPage(async (page) => {
      const s = server();
      const gate = join(scratch, 'gate');
      // The first run fails at once; the second waits for the gate, then succeeds.
      const job = await submit(s.api, s.adminToken, 'default', {
        script: countedRuns(
          scratch,
          'count',
          `echo "run $n"; [ $n -ge 2 ] || exit 4; while [ ! -e ${gate} ]; do sleep 0.05; done`,
        ),
        retries: 2,
        retryBackoffSeconds: 1,
      });
      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/jobs/${job.id}`);
      const attempts = page.getByRole('region', { name: 'Attempts' });
      // Its first attempt ended: the section appears, live, with that attempt and the current one.
      await attempts
        .getByRole('row', { name: /^1 retried exited with code 4 4 the job's own failure/ })
        .waitFor();
      await page.getByText('1 of 2 used for its own failures').waitFor();

      writeFileSync(gate, '');
      assert.equal((await waitDone(s.api, s.adminToken, job.id)).state, 'succeeded');
      await attempts.getByRole('row', { name: /^2 succeeded exited with code 0 0/ }).waitFor();

      await attempts.getByRole('button', { name: 'Output of attempt 1' }).click();
      const output = attempts.getByLabel('Output of attempt 1', { exact: true }).and(page.locator('pre'));
      await output.getByText('run 1').waitFor();
      assert.equal((await output.textContent())?.trim(), 'run 1');
    }));
});
