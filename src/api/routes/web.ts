/**
 * The dashboard: the single-page app built into `dist/web` (Vite), served at `/` by the same
 * server as the API. A browser's GET of any path outside `/api` that is not a file answers the
 * app's index.html, so the app's own routes survive a reload; hashed files under `/assets/` are
 * cached for good, index.html never. Without a build, `/` says how to make one.
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { packageRoot } from '../../package-root.js';

export const WEB_ROOT = join(packageRoot(), 'dist', 'web');

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>berth</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 4em auto">
<h1>berth</h1>
<p>The dashboard is not built. Build it with <code>npm run build</code> in berth's folder, then
restart the server.</p>
<p>The API is served as usual under <a href="/api/v1/openapi.json"><code>/api/v1</code></a>.</p>
</body></html>
`;

const isApiPath = (path: string) => path === '/api' || path.startsWith('/api/');
const acceptsHtml = (accept: string | undefined) => (accept ?? '').includes('text/html');

/** `path` (a URL path) as a regular file inside `root`, relative to it, or undefined. */
function fileIn(root: string, path: string): string | undefined {
  let full: string;
  try {
    full = resolve(root, '.' + decodeURIComponent(path));
  } catch {
    return undefined; // malformed percent-encoding
  }
  if (!full.startsWith(root + sep)) return undefined;
  try {
    return statSync(full).isFile() ? full.slice(root.length + 1) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Answers the GET requests no route matched (so no wildcard route shadows the API's own 404s):
 * a file of the build, else the app's index.html — for `/`, and for any other path when the
 * client asks for HTML (a browser loading one of the app's own routes), while other clients keep
 * the JSON 404, and `/api/...` always does.
 */
export async function webRoutes(app: FastifyInstance, webRoot = WEB_ROOT): Promise<void> {
  const root = resolve(webRoot);
  const built = existsSync(join(root, 'index.html'));
  // Only the decorator (reply.sendFile): the hook below decides what each path answers.
  if (built) await app.register(fastifyStatic, { root, serve: false });

  const index = (reply: FastifyReply) =>
    built
      ? reply.header('cache-control', 'no-cache').sendFile('index.html', { cacheControl: false })
      : reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(NOT_BUILT);

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.url !== undefined) return; // a route answers
    if (request.method !== 'GET' && request.method !== 'HEAD') return;
    const path = request.url.split('?')[0] ?? '/';
    if (isApiPath(path)) return;
    const file = built ? fileIn(root, path) : undefined;
    if (file?.startsWith('assets/')) {
      // Vite puts a content hash in every name under assets/: a changed file gets a new name.
      return reply.sendFile(file, { maxAge: 365 * 24 * 3600 * 1000, immutable: true });
    }
    if (file) return reply.header('cache-control', 'no-cache').sendFile(file, { cacheControl: false });
    if (path.startsWith('/assets/')) return; // a missing asset is a 404, never the app
    if (path === '/' || acceptsHtml(request.headers.accept)) return index(reply);
  });
}
