#!/usr/bin/env node
// The `berth` command. Runs the compiled CLI (built by `npm install`/`npm ci` via `prepare`).
import('../dist/cli/main.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
    process.stderr.write('berth: not built yet; run `npm run build` in the berth checkout\n');
    process.exit(1);
  }
  throw err;
});
