/**
 * A job's artifacts in chromium: the job page, open while the job runs, lists the kept file once
 * the job ends (without a reload), with its size, and its Download button saves its exact bytes.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { signIn, useBrowser } from '../helpers/browser.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { localFactoryConfig, useTestServer } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';

const server = useTestServer({ config: localFactoryConfig(2) });
const b = useBrowser();
const scratch = scratchDir('berth-web-artifacts-');
after(() => rmSync(scratch, { recursive: true, force: true }));

describe('artifacts on the job page', () => {
  it('appear when the job ends, with their size, and download with their bytes', () =>
    b.withPage(async (page) => {
      const s = server();
      const gate = join(scratch, 'gate');
      const job = await submit(s.api, s.adminToken, 'default', {
        script: `mkdir out && printf 'id,score\\n1,0.5\\n' > out/scores.csv && while [ ! -e ${gate} ]; do sleep 0.05; done`,
        artifacts: ['out/*.csv'],
      });
      await signIn(page, s.url, s.adminToken);
      await page.goto(`${s.url}/jobs/${job.id}`);
      const section = page.getByRole('region', { name: 'Artifacts' });
      await section.getByText('Kept when the job has run: out/*.csv').waitFor();

      writeFileSync(gate, '');
      await waitDone(s.api, s.adminToken, job.id);
      const button = section.getByRole('button', { name: 'Download out/scores.csv' });
      await button.waitFor();
      assert.equal(
        await section
          .getByRole('row', { name: /out\/scores\.csv/ })
          .getByText('15 B', { exact: true })
          .count(),
        1,
      );

      const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
      assert.equal(download.suggestedFilename(), 'scores.csv');
      const saved = join(scratch, 'saved.csv');
      await download.saveAs(saved);
      assert.equal(readFileSync(saved, 'utf8'), 'id,score\n1,0.5\n');
    }));
});
