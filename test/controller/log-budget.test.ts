/**
 * The bound on one run's output (controller/log-budget.ts), on a real log file: the run's output
 * up to the bound, then exactly one notice however the uploads interleave; a controller that
 * starts counting mid-run (a restarted server, a new leader) counts on from what the log holds.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { after, describe, it } from 'node:test';
import { LogBudget, utf8Prefix } from '../../src/controller/log-budget.js';
import { FileLogStore } from '../../src/store/log-store.js';
import type { Db } from '../../src/store/store.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-log-budget-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const logs = new FileLogStore(dir);
/** A first attempt reads no attempts from the store. */
const noDb = {} as Db;
const NOTICE =
  'berth: log limit of 100 B reached; further output of this run is dropped (logs.maxBytesPerJob)\n';

describe('the log budget of a run', () => {
  it('cuts UTF-8 between characters', () => {
    assert.equal(utf8Prefix('aé€', 1), 'a');
    assert.equal(utf8Prefix('aé€', 2), 'a');
    assert.equal(utf8Prefix('aé€', 3), 'aé');
    assert.equal(utf8Prefix('aé€', 5), 'aé');
    assert.equal(utf8Prefix('aé€', 6), 'aé€');
    assert.equal(utf8Prefix('x', 0), '');
  });

  it('keeps output up to the bound, then one notice, however many uploads come at once', async () => {
    const job = { id: 1, attempts: 0 };
    const budget = new LogBudget(logs, noDb, 100);
    await Promise.all(Array.from({ length: 20 }, () => budget.append(job, '0123456789')));
    assert.equal(await text(logs.read(1)), `${'0123456789'.repeat(10)}\n${NOTICE}`);
  });

  it('counts on from what the log holds when it starts mid-run (a restart, a new leader)', async () => {
    await logs.append(2, 'a'.repeat(96));
    const budget = new LogBudget(logs, noDb, 100);
    // 4 bytes left: the line is cut there, and the notice starts a line of its own.
    await budget.append({ id: 2, attempts: 0 }, 'bbbbcccc\n');
    assert.equal(await text(logs.read(2)), `${'a'.repeat(96)}bbbb\n${NOTICE}`);
    // Another controller after the notice: nothing more, and no second notice.
    await new LogBudget(logs, noDb, 100).append({ id: 2, attempts: 0 }, 'more\n');
    assert.equal(await text(logs.read(2)), `${'a'.repeat(96)}bbbb\n${NOTICE}`);
  });
});
