/**
 * The dashboard's sign-in and navigation, in chromium: a wrong token is refused with the
 * server's message, the right one opens the overview, and all of it works from the keyboard.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { useBrowser } from '../helpers/browser.js';
import { useTestServer } from '../helpers/server.js';

const server = useTestServer();
const b = useBrowser();

describe('signing in', () => {
  it('refuses a wrong token with the server message, and stays signed out', () =>
    b.withPage(
      async (page) => {
        await page.goto(server().url);
        await page.getByLabel('Token', { exact: true }).fill('not-a-token');
        await page.getByRole('button', { name: 'Sign in' }).click();
        const alert = page.getByRole('alert');
        await alert.filter({ hasText: 'invalid token' }).waitFor();
        assert.equal(await page.getByRole('button', { name: 'Sign out' }).count(), 0);
        assert.equal(await page.getByLabel('Token', { exact: true }).count(), 1);
      },
      { expectConsole: [/status of 401/] },
    ));

  it('opens the overview with the right token, and signs out again', () =>
    b.withPage(async (page) => {
      await page.goto(server().url);
      const token = page.getByLabel('Token', { exact: true });
      assert.equal(await token.getAttribute('type'), 'password');
      await token.fill(server().adminToken);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      const nav = page.getByRole('navigation', { name: 'Main' });
      for (const name of ['Overview', 'Projects', 'Jobs', 'Submit']) {
        await nav.getByRole('link', { name, exact: true }).waitFor();
      }
      await page.getByRole('combobox', { name: 'Project' }).waitFor();
      // The session survives a reload (sessionStorage) …
      await page.reload();
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      // … and ends with "Sign out".
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('Token', { exact: true }).waitFor();
      assert.equal(await page.getByRole('navigation', { name: 'Main' }).count(), 0);
    }));
});

describe('the keyboard', () => {
  /** Presses Tab until `target` has the focus; fails after `max` presses. */
  async function tabTo(page: Page, isTarget: () => Promise<boolean>, what: string) {
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      if (await isTarget()) return;
    }
    assert.fail(`Tab never reached ${what}`);
  }

  const focused = (page: Page) =>
    page.evaluate<{ tag: string; label: string; text: string; outline: string; shadow: string }>(`(() => {
      const el = document.activeElement;
      const style = el ? getComputedStyle(el) : null;
      return {
        tag: el ? el.tagName.toLowerCase() : '',
        label: el ? el.getAttribute('aria-label') || (el.labels && el.labels[0] ? el.labels[0].textContent.trim() : '') : '',
        text: el ? el.textContent.trim() : '',
        outline: style ? style.outlineStyle + ' ' + style.outlineWidth : '',
        shadow: style ? style.boxShadow : '',
      };
    })()`);

  /** A focused control shows a focus ring: an outline or a box shadow. */
  const assertRing = (f: { outline: string; shadow: string }, what: string) =>
    assert.ok(
      !f.outline.startsWith('none') || (f.shadow !== 'none' && f.shadow !== ''),
      `${what} has no visible focus ring (outline ${f.outline}, box-shadow ${f.shadow})`,
    );

  it('signs in and reaches every navigation link with Tab and Enter', () =>
    b.withPage(async (page) => {
      await page.goto(server().url);
      await page.getByLabel('Token', { exact: true }).waitFor();
      await tabTo(page, async () => (await focused(page)).label === 'Token', 'the Token input');
      assertRing(await focused(page), 'the Token input');
      await page.keyboard.type(server().adminToken);
      await tabTo(page, async () => (await focused(page)).text === 'Sign in', 'the Sign in button');
      assertRing(await focused(page), 'the Sign in button');
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();

      for (const [link, heading] of [
        ['Projects', 'Projects'],
        ['Submit', 'Submit a job'],
        ['Jobs', 'Jobs'],
        ['Overview', 'Overview'],
      ] as const) {
        await tabTo(
          page,
          async () => {
            const f = await focused(page);
            return f.tag === 'a' && f.text === link;
          },
          `the "${link}" link`,
        );
        assertRing(await focused(page), `the "${link}" link`);
        await page.keyboard.press('Enter');
        await page.getByRole('heading', { name: heading, exact: true }).first().waitFor();
      }
    }));
});
