/**
 * The dashboard's static serving: the built app at `/`, its files, index.html for the app's own
 * routes, the API's JSON 404 kept, and a placeholder page when nothing is built.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildApi, type Api } from '../../src/api/app.js';
import { WEB_ROOT } from '../../src/api/routes/web.js';
import { packageRoot } from '../../src/package-root.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { startTestServer } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';
import { ROOT } from '../helpers/root.js';

const INDEX = '<!doctype html><html><body><div id="root">the berth app</div></body></html>';
const HTML = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

let dir: string;
let store: Store;

/** An API over a fresh store whose dashboard is served from `webRoot`. */
async function api(webRoot: string): Promise<Api> {
  const app = await buildApi({ store, now: Date.now }, { version: 'test', webRoot });
  await app.ready();
  return app;
}

before(async () => {
  dir = scratchDir('berth-web-');
  store = await openSqliteStore(join(dir, 'berth.db'));
  const web = join(dir, 'web');
  mkdirSync(join(web, 'assets'), { recursive: true });
  writeFileSync(join(web, 'index.html'), INDEX);
  writeFileSync(join(web, 'assets', 'index-3f2a1b.js'), 'console.log("app");\n');
  writeFileSync(join(web, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(dir, 'secret.txt'), 'not for the web');
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a built dashboard', () => {
  let app: Api;
  before(async () => {
    app = await api(join(dir, 'web'));
  });
  after(() => app.close());

  it('answers / with index.html, never cached, without a token', async () => {
    const res = await app.inject({ method: 'GET', url: '/' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.equal(res.headers['cache-control'], 'no-cache');
    assert.equal(res.body, INDEX);
  });

  it("answers the app's own routes with the same index.html when a browser asks", async () => {
    for (const url of ['/projects/x/jobs', '/jobs/12?tab=log', '/queues']) {
      const res = await app.inject({ method: 'GET', url, headers: HTML });
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.body, INDEX, url);
      assert.equal(res.headers['cache-control'], 'no-cache', url);
    }
  });

  it('serves hashed assets for a year and other files uncached', async () => {
    const asset = await app.inject({ method: 'GET', url: '/assets/index-3f2a1b.js' });
    assert.equal(asset.statusCode, 200);
    assert.match(String(asset.headers['content-type']), /javascript/);
    assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(asset.body, 'console.log("app");\n');
    const icon = await app.inject({ method: 'GET', url: '/favicon.svg' });
    assert.equal(icon.statusCode, 200);
    assert.match(String(icon.headers['content-type']), /^image\/svg\+xml/);
    assert.equal(icon.headers['cache-control'], 'no-cache');
    const head = await app.inject({ method: 'HEAD', url: '/' });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
  });

  it('keeps the JSON 404 for unknown API paths, for a missing asset and for clients that are not browsers', async () => {
    for (const [url, headers] of [
      ['/api/v1/nope', {}],
      ['/api/v1/nope', HTML],
      ['/api', HTML],
      ['/assets/missing-000.js', {}],
      ['/assets/missing-000.js', HTML],
      ['/projects/x/jobs', { accept: 'application/json' }],
    ] as const) {
      const res = await app.inject({ method: 'GET', url, headers });
      assert.equal(res.statusCode, 404, url);
      assert.deepEqual(res.json(), {
        error: { code: 'not_found', message: `no route GET ${url}` },
      });
    }
  });

  it('never serves a file outside its folder', async () => {
    for (const url of ['/../secret.txt', '/%2e%2e/secret.txt', '/assets/..%2f..%2fsecret.txt']) {
      const res = await app.inject({ method: 'GET', url, headers: HTML });
      assert.doesNotMatch(res.body, /not for the web/, url);
    }
  });

  it('leaves the API as it was: a known route still needs its token', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/projects', headers: HTML });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json<{ error: { code: string } }>().error.code, 'unauthorized');
  });
});

describe('without a build', () => {
  it('answers / with a page that says how to build the dashboard, and still serves the API', async () => {
    const app = await api(join(dir, 'no-such-build'));
    try {
      const res = await app.inject({ method: 'GET', url: '/' });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.match(res.body, /dashboard is not built/);
      assert.match(res.body, /npm run build/);
      const health = await app.inject({ method: 'GET', url: '/api/v1/health' });
      assert.equal(health.statusCode, 200);
    } finally {
      await app.close();
    }
  });
});

describe('the real server', () => {
  it("serves the package's dist/web (or the placeholder) at / and JSON 404s under /api", async () => {
    assert.equal(WEB_ROOT, join(packageRoot(), 'dist', 'web'));
    // The repository's root from each place its modules run: sources, the build, the tests' build.
    assert.ok(existsSync(join(ROOT, 'src', 'api', 'routes', 'web.ts')), ROOT);
    for (const from of ['src/api/routes', 'dist/api/routes', 'build/src/api/routes'])
      assert.equal(packageRoot(join(ROOT, from)), ROOT, from);
    const s = await startTestServer();
    try {
      const page = await fetch(s.url + '/', { headers: HTML });
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(await page.text(), /<html/i);
      const route = await fetch(s.url + '/projects/x/jobs', { headers: HTML });
      assert.equal(route.status, 200);
      assert.match(route.headers.get('content-type') ?? '', /^text\/html/);
      const nope = await fetch(s.url + '/api/v1/nope', { headers: HTML });
      assert.equal(nope.status, 404);
      assert.equal(((await nope.json()) as { error: { code: string } }).error.code, 'not_found');
    } finally {
      await s.close();
    }
  });
});
