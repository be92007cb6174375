/**
 * A job that fills its disk (docs/SECURITY.md, "Local jobs"): with the local factory's `workRoot`
 * on a filesystem of its own, the job meets ENOSPC there and the server, whose data directory is
 * elsewhere, goes on writing — its end, its log, the next job. A 2 MiB tmpfs stands in for the
 * jobs' disk; mounting one needs root.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { submit, waitDone } from '../helpers/jobs.js';
import { scratchDir } from '../helpers/scratch.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';

const skip = process.getuid?.() === 0 ? false : 'mounting a small tmpfs for the jobs needs root';

describe('a job that fills its disk', { skip }, () => {
  let s: TestServer;
  let root: string;
  let mounted = false;
  before(async () => {
    root = scratchDir('berth-full-disk-');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', root]);
    mounted = true;
    s = await startTestServer({
      config: `graceSeconds: 1\nfactories:\n  local: { kind: local, capacity: 2, workRoot: ${join(root, 'workers')} }\n`,
    });
  });
  after(async () => {
    await s?.close();
    if (mounted) execFileSync('umount', [root]);
    rmSync(root, { recursive: true, force: true });
  });

  it('meets ENOSPC on its own filesystem; the server records its end, its log and the next job', async () => {
    const filler = await submit(s.api, s.adminToken, 'default', {
      script:
        'dd if=/dev/zero of="$BERTH_WORKDIR/fill" bs=64k 2>&1; echo "dd exit $?"; df -k "$BERTH_WORKDIR" | tail -1',
    });
    const done = await waitDone(s.api, s.adminToken, filler.id);
    assert.equal(done.state, 'succeeded', done.reason);
    const log = (await call(s.api, s.adminToken, 'GET', `/jobs/${filler.id}/logs`)).text;
    assert.match(log, /No space left on device/, log);
    assert.match(log, /^dd exit 1$/m, log);
    // The server's own writes go on: the next job is recorded from submission to end.
    const next = await submit(s.api, s.adminToken, 'default', { command: ['echo', 'after'] });
    const after = await waitDone(s.api, s.adminToken, next.id);
    assert.equal(after.state, 'succeeded', after.reason);
    assert.equal((await call(s.api, s.adminToken, 'GET', `/jobs/${next.id}/logs`)).text, 'after\n');
  });
});
