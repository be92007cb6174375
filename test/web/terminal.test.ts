/**
 * A terminal inside a running job, from its page in chromium (components/Terminal.tsx over
 * `GET /jobs/{id}/exec` with the token as a subprotocol): typed on, its output rendered by
 * xterm.js, its end said; closing it ends the shell; an interactive job's page attaches to the
 * job's own terminal; who may not run a command inside the job (a viewer, a member who did not
 * submit it) gets no button.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { signIn, useBrowser } from '../helpers/browser.js';
import { getJob, submit } from '../helpers/jobs.js';
import { jobProcesses } from '../helpers/processes.js';
import { adminOf, localFactoryConfig, useTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const support = probeSandbox();
const skip = support.available ? false : `jobs run without namespaces here: ${support.why}`;

const tokens: Record<string, string> = {};
let batch = 0;
let interactive = 0;

const server = useTestServer({ config: localFactoryConfig(4) }, async () => {
  if (skip) return;
  const s = server();
  const admin = adminOf(s);
  await admin('POST', '/projects', { name: 'alpha', clusterQueue: 'default' });
  for (const [user, role] of [
    ['alice', 'member'],
    ['bob', 'member'],
    ['olga', 'owner'],
    ['vera', 'viewer'],
  ] as const) {
    tokens[user] = (await admin<{ token: string }>('POST', '/users', { name: user })).token;
    await admin('PUT', `/projects/alpha/members/${user}`, { role });
  }
  batch = (await submit(s.api, tokens.alice!, 'alpha', { name: 'sleeper', script: 'exec sleep 300' })).id;
  interactive = (
    await submit(s.api, tokens.alice!, 'alpha', { command: ['sh'], interactive: true, timeoutSeconds: 600 })
  ).id;
  for (const id of [batch, interactive])
    await waitFor(
      `job ${id} to run`,
      async () => (await getJob(s.api, tokens.alice!, id)).state === 'running',
    );
});
const b = useBrowser();

/** The text xterm.js renders (its DOM renderer: a row per line, blank cells as no-break spaces). */
const screenText = async (page: Page) =>
  (await page.locator('.terminal-section .xterm-rows').innerText()).replace(/\u00a0/g, ' ');

/** Waits until the terminal shows `text`; fails with what it shows. */
async function shows(page: Page, text: string | RegExp): Promise<void> {
  let last = '';
  try {
    await waitFor(`the terminal to show ${String(text)}`, async () => {
      last = await screenText(page);
      return typeof text === 'string' ? last.includes(text) : text.test(last);
    });
  } catch (e) {
    assert.fail(`${(e as Error).message}; it shows:\n${last.trimEnd()}`);
  }
}

/** Opens job `id`'s page as `token`'s user and waits for it to show the job running. */
async function openJob(page: Page, token: string, id: number): Promise<void> {
  const s = server();
  await signIn(page, s.url, token);
  await page.goto(`${s.url}/jobs/${id}`);
  await page.getByRole('heading', { name: `Job ${id}`, level: 1 }).waitFor();
  await page.locator('.status-line').getByText('running', { exact: true }).waitFor();
}

/** Types `line` into the terminal, then Enter. */
async function typeLine(page: Page, line: string): Promise<void> {
  await page.locator('.terminal-section .xterm').click();
  await page.keyboard.type(line);
  await page.keyboard.press('Enter');
}

/** The terminal's size as the shell's `stty size` says it, on a line marked `mark`. */
async function sizeSaid(page: Page, mark: string): Promise<{ rows: number; cols: number }> {
  await typeLine(page, `echo "${mark}: $(stty size)"`);
  const line = new RegExp(`${mark}: (\\d+) (\\d+)`);
  await shows(page, line);
  const [rows, cols] = line
    .exec(await screenText(page))!
    .slice(1)
    .map(Number) as [number, number];
  return { rows, cols };
}

/** The job's processes whose command line is `argv`. */
const processesOf = (id: number, argv: string[]) =>
  jobProcesses(server(), id).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === argv.map((a) => `${a}\0`).join('');
    } catch {
      return false;
    }
  });

describe("a running job's terminal in the dashboard", { skip }, () => {
  it('runs a shell in the job: typed on, its output shown, its exit code said', () =>
    b.withPage(async (page) => {
      await openJob(page, tokens.alice!, batch);
      assert.equal(
        await page.getByRole('button', { name: 'Attach' }).count(),
        0,
        'a batch job has no Attach',
      );
      await page.getByRole('button', { name: 'Terminal', exact: true }).click();
      const status = page.locator('.terminal-status');
      await status.getByText(`A shell inside job ${batch}`).waitFor();
      assert.equal(await page.getByRole('button', { name: 'Terminal', exact: true }).count(), 0);

      await typeLine(page, 'echo "from the browser $((6*7))"');
      // The line typed holds $((6*7)); only the shell's output holds 42.
      await shows(page, 'from the browser 42');
      // Its size is the box's (as many rows as xterm.js draws, wider than the default 80), and
      // follows it: a narrower window, fewer columns.
      const wide = await sizeSaid(page, 'wide');
      assert.equal(wide.rows, await page.locator('.terminal-section .xterm-rows > div').count());
      assert.ok(wide.cols > 100, `${wide.cols} columns`);
      await page.setViewportSize({ width: 700, height: 800 });
      const narrow = await sizeSaid(page, 'narrow');
      assert.ok(narrow.cols < wide.cols - 40, `${narrow.cols} columns, from ${wide.cols}`);

      await typeLine(page, 'exit 3');
      await status.getByText('Ended: exited with code 3.').waitFor();
      await waitFor('the shell to be gone from the job', () => processesOf(batch, ['sh']).length === 0);
      assert.equal((await getJob(server().api, tokens.alice!, batch)).state, 'running', 'the job runs on');
    }));

  it('ends the shell when it is closed', () =>
    b.withPage(async (page) => {
      await openJob(page, tokens.olga!, batch);
      await page.getByRole('button', { name: 'Terminal', exact: true }).click();
      await page.locator('.terminal-status').getByText(`A shell inside job ${batch}`).waitFor();
      await typeLine(page, 'echo "owner $((6*7))"');
      await shows(page, 'owner 42');
      assert.equal(processesOf(batch, ['sh']).length, 1, 'the shell runs in the job');
      await page.getByRole('button', { name: 'Close terminal' }).click();
      await page.getByRole('region', { name: 'Terminal' }).waitFor({ state: 'detached' });
      await waitFor('the shell to be gone from the job', () => processesOf(batch, ['sh']).length === 0);
      // And it can be opened again.
      await page.getByRole('button', { name: 'Terminal', exact: true }).waitFor();
    }));

  it("attaches to an interactive job's own terminal", () =>
    b.withPage(async (page) => {
      await openJob(page, tokens.alice!, interactive);
      assert.equal(await page.getByRole('button', { name: 'Terminal', exact: true }).count(), 0);
      await page.getByRole('button', { name: 'Attach' }).click();
      await page.locator('.terminal-status').getByText(`Attached to job ${interactive}'s terminal`).waitFor();
      await typeLine(page, 'echo "attached $((6*7))"');
      await shows(page, 'attached 42');
      await typeLine(page, 'exit 4');
      await page.locator('.terminal-status').getByText('Ended: exited with code 4.').waitFor();
      await waitFor(
        'the interactive job to end with its code',
        async () => (await getJob(server().api, tokens.alice!, interactive)).exitCode === 4,
      );
    }));

  for (const [who, why] of [
    ['vera', 'a viewer'],
    ['bob', 'a member who did not submit it'],
  ] as const)
    it(`shows no Terminal button to ${why}`, () =>
      b.withPage(async (page) => {
        const s = server();
        await signIn(page, s.url, tokens[who]!);
        // The page's buttons wait on the caller's role in the project: the answer is awaited.
        const role = page.waitForResponse((r) => r.url() === `${s.api}/projects/alpha`);
        await page.goto(`${s.url}/jobs/${batch}`);
        await page.locator('.status-line').getByText('running', { exact: true }).waitFor();
        assert.equal((await role).status(), 200);
        await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => resolve()))');
        // A member sees Cancel once the role is known (a viewer never does): the role has arrived.
        if (who === 'bob') await page.getByRole('button', { name: 'Cancel job' }).waitFor();
        assert.equal(await page.getByRole('button', { name: 'Terminal', exact: true }).count(), 0);
        assert.equal(await page.getByRole('button', { name: 'Attach' }).count(), 0);
      }));
});
