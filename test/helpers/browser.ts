/**
 * The dashboard in a real browser: Debian's chromium driven by playwright-core. One browser per
 * test file (`useBrowser`), a fresh context per test (`withPage`), and every console error or
 * warning and every uncaught page error fails the test that caused it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { ROOT } from './root.js';

export const CHROMIUM = process.env.BERTH_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Without the background-networking flags chromium keeps calling Google services, which on a
 * closed network means a stream of refused connections.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the browser tests drive Debian's chromium (apt-get install chromium; .ci/run does)`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

export const WEB_INDEX = join(ROOT, 'dist', 'web', 'index.html');

function newestMtime(dir: string): number {
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { withFileTypes: true }).reduce((m, e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? m : Math.max(m, newestMtime(path));
    return Math.max(m, statSync(path).mtimeMs);
  }, 0);
}

/**
 * The server serves the app from dist/web. When it is missing, builds it once (`npm run build:web`,
 * else `npm run build`); test files may run in parallel, so a lock directory makes the others wait
 * for that one build.
 */
export async function ensureWebBuild(): Promise<void> {
  if (existsSync(WEB_INDEX)) {
    if (newestMtime(join(ROOT, 'web')) > statSync(WEB_INDEX).mtimeMs) {
      process.stderr.write(
        `note: web/ has changed since dist/web was built; the browser tests use the old build (npm run build)\n`,
      );
    }
    return;
  }
  const lock = join(tmpdir(), 'berth-web-build.lock');
  // A lock left by a build that was killed is not waited for.
  if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 5 * 60_000) rmdirSync(lock);
  let mine = false;
  try {
    mkdirSync(lock);
    mine = true;
  } catch {
    // another test file is building it
  }
  if (mine) {
    try {
      // `npm run build` builds the server and the app; build:web, when there is one, only the app.
      const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts?: object })
        .scripts;
      const script = scripts && 'build:web' in scripts ? 'build:web' : 'build';
      process.stderr.write(
        `dist/web/index.html is missing: running "npm run ${script}" once for the browser tests\n`,
      );
      // Its output goes to stderr: a test file's stdout belongs to the test runner.
      const r = spawnSync('npm', ['run', script], { cwd: ROOT, stdio: ['ignore', 2, 2] });
      if (r.status !== 0 || !existsSync(WEB_INDEX)) {
        throw new Error(
          `"npm run ${script}" did not produce ${WEB_INDEX} (exit ${r.status}); build it by hand`,
        );
      }
    } finally {
      rmdirSync(lock);
    }
    return;
  }
  const deadline = Date.now() + 180_000;
  while (existsSync(lock) && Date.now() < deadline) await delay(200);
  if (!existsSync(WEB_INDEX)) throw new Error(`${WEB_INDEX} is missing after another test file's build`);
}

export interface PageOptions extends BrowserContextOptions {
  /**
   * Console messages the test expects, e.g. the browser's own "Failed to load resource … 401"
   * line for a request the test makes fail on purpose. Each must match at least one message.
   */
  expectConsole?: RegExp[];
}

export interface BrowserFixture {
  browser(): Browser;
  /**
   * Runs `fn` with a page in a fresh context, then fails if the page logged a console error or
   * warning or threw. On failure, a screenshot of the page is kept and its path printed.
   */
  withPage(fn: (page: Page) => Promise<void>, opts?: PageOptions): Promise<void>;
}

let failureShots = 0;

export async function withPageOf(
  browser: Browser,
  fn: (page: Page) => Promise<void>,
  opts: PageOptions = {},
): Promise<void> {
  const { expectConsole = [], ...contextOptions } = opts;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...contextOptions });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const problems: string[] = [];
  const expected = new Set<RegExp>();
  page.on('console', (m) => {
    if (m.type() !== 'error' && m.type() !== 'warning') return;
    const text = `console.${m.type()}: ${m.text()} (${m.location().url})`;
    const match = expectConsole.find((re) => re.test(m.text()));
    if (match) expected.add(match);
    else problems.push(text);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.stack ?? e.message}`));
  try {
    await fn(page);
    assert.deepEqual(problems, [], 'the page logged console errors or warnings, or threw');
    for (const re of expectConsole) assert.ok(expected.has(re), `expected a console message matching ${re}`);
  } catch (e) {
    const file = join(tmpdir(), `berth-web-failure-${process.pid}-${++failureShots}.png`);
    try {
      await page.screenshot({ path: file, fullPage: true });
      process.stderr.write(`screenshot of the failing page: ${file} (at ${page.url()})\n`);
    } catch {
      // the page is gone; the error says why
    }
    if (problems.length > 0 && !(e instanceof assert.AssertionError)) {
      process.stderr.write(`console problems before the failure:\n  ${problems.join('\n  ')}\n`);
    }
    throw e;
  } finally {
    await context.close();
  }
}

/** Registers `before`/`after` hooks: builds the app if needed and launches one browser. */
export function useBrowser(): BrowserFixture {
  let browser: Browser | undefined;
  before(async () => {
    await ensureWebBuild();
    browser = await launchChromium();
  });
  after(() => browser?.close());
  const get = () => {
    if (!browser) throw new Error('the browser has not started');
    return browser;
  };
  return {
    browser: get,
    withPage: (fn, opts) => withPageOf(get(), fn, opts),
  };
}

/** Signs in through the form and waits for the signed-in app (its "Sign out" button). */
export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel('Token', { exact: true }).fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** The width the document would scroll to: wider than the viewport means the page scrolls sideways. */
export function documentScrollWidth(page: Page): Promise<number> {
  return page.evaluate<number>('document.documentElement.scrollWidth');
}
