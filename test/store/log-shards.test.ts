/**
 * The file log store's directories (a directory per thousand jobs under DATA/logs): the retention
 * sweep's `discard` removes each directory it leaves empty — years of history swept would
 * otherwise leave an empty directory per thousand jobs — and keeps every one that still holds a
 * log; a log written to a directory removed since it was first made is written all the same.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FileLogStore } from '../../src/store/log-store.js';
import { scratchDir } from '../helpers/scratch.js';

describe('the log directories', () => {
  const dir = scratchDir('berth-log-shards-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('go when a discard empties them, and stay while a log is left', async () => {
    const logs = new FileLogStore(join(dir, 'a'));
    for (const id of [1000, 1001, 1999, 2000, 2001]) await logs.append(id, Buffer.from(`job ${id}\n`));
    assert.deepEqual(readdirSync(join(dir, 'a')).sort(), ['1', '2']);
    // Job 1500 wrote nothing: it has no file, and its directory goes with the others' files.
    await logs.discard([1000, 1001, 1500, 1999, 2000]);
    assert.deepEqual(readdirSync(join(dir, 'a')), ['2'], 'directory 1 emptied and removed, 2 kept');
    assert.deepEqual(readdirSync(join(dir, 'a', '2')), ['2001.log']);
    await logs.discard([2001]);
    assert.deepEqual(readdirSync(join(dir, 'a')), []);
  });

  it('are made again for a log written after its directory went', async () => {
    const logs = new FileLogStore(join(dir, 'b'));
    await logs.append(3000, Buffer.from('first\n'));
    await logs.discard([3000]);
    assert.equal(existsSync(join(dir, 'b', '3')), false);
    await logs.append(3001, Buffer.from('later\n'));
    assert.equal(logs.size(3001), 'later\n'.length);
    assert.equal(existsSync(join(dir, 'b', '3', '3001.log')), true);
  });
});
