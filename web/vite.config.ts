// The dashboard's build: `vite build --config web/vite.config.ts` writes dist/web, which
// `berth server` serves at `/`. No React plugin: Oxc's automatic JSX runtime is enough.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    target: 'es2022',
  },
  server: {
    // Development only (`npx vite --config web/vite.config.ts`): the API, including the
    // server-sent event stream, comes from a `berth server --listen 127.0.0.1:4700` next to it.
    // ws: the job page's terminal (a WebSocket) through the dev server too.
    proxy: { '/api': { target: 'http://127.0.0.1:4700', ws: true } },
  },
});
