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
  it('cuts UTF-8 between characters, and bytes that are not UTF-8 at most 3 short of the bound', () => {
    const cut = (s: string | Buffer, n: number) => utf8Prefix(Buffer.from(s), n).toString('latin1');
    const b = (s: string) => Buffer.from(s).toString('latin1');
    for (const [n, kept] of [
      [1, 'a'],
      [2, 'a'],
      [3, 'aé'],
      [5, 'aé'],
      [6, 'aé€'],
    ] as const)
      assert.equal(cut('aé€', n), b(kept), `${n} bytes`);
    assert.equal(cut('x', 0), '');
    // Every byte a continuation byte: three go back, no more (nothing here is UTF-8 to keep whole).
    assert.equal(cut(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80]), 5).length, 2);
    assert.equal(cut(Buffer.from([0xff, 0xfe, 0x00]), 2), '\xff\xfe');
  });

  it('keeps output up to the bound, then one notice, however many uploads come at once', async () => {
    const job = { id: 1, attempts: 0 };
    const budget = new LogBudget(logs, noDb, 100);
    await Promise.all(Array.from({ length: 20 }, () => budget.append(job, Buffer.from('0123456789'))));
    assert.equal(await text(logs.read(1)), `${'0123456789'.repeat(10)}\n${NOTICE}`);
  });

  it('counts on from what the log holds when it starts mid-run (a restart, a new leader)', async () => {
    await logs.append(2, Buffer.from('a'.repeat(96)));
    const budget = new LogBudget(logs, noDb, 100);
    // 4 bytes left: the line is cut there, and the notice starts a line of its own.
    await budget.append({ id: 2, attempts: 0 }, Buffer.from('bbbbcccc\n'));
    assert.equal(await text(logs.read(2)), `${'a'.repeat(96)}bbbb\n${NOTICE}`);
    // Another controller after the notice: nothing more, and no second notice.
    await new LogBudget(logs, noDb, 100).append({ id: 2, attempts: 0 }, Buffer.from('more\n'));
    assert.equal(await text(logs.read(2)), `${'a'.repeat(96)}bbbb\n${NOTICE}`);
  });
});
