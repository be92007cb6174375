/**
 * A gang member's output labelled by rank (agent/rank-label.ts), as bytes: however the output is
 * cut into reads, each line comes out once, whole, after one label, and its bytes as written —
 * whatever they are (not UTF-8 included).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MAX_LINE, RankLabel } from '../../src/agent/rank-label.js';

/** Feeds `data` to a label cut at `cuts`, then ends it. */
function labelled(data: Buffer, cuts: number[]): Buffer {
  const label = new RankLabel('3: ');
  const out: Buffer[] = [];
  let at = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    out.push(label.write(data.subarray(at, Math.max(at, cut))));
    at = Math.max(at, cut);
  }
  out.push(label.write(data.subarray(at)), label.end());
  return Buffer.concat(out);
}

/** What `srun --label` would print: each line after the label, a last unfinished line ended. */
function reference(data: Buffer): Buffer {
  const text = data.toString('latin1'); // one character per byte: the split is on 0x0a alone
  if (text === '') return Buffer.alloc(0);
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  return Buffer.from(lines.map((l) => `3: ${l}\n`).join(''), 'latin1');
}

describe('a rank label', () => {
  it('labels each line once, whole, however the reads cut it (every byte value)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a.map((b) => (b % 7 === 0 ? 0x0a : b)))),
        fc.array(fc.nat(200), { maxLength: 8 }),
        (data, cuts) => assert.deepEqual(labelled(data, cuts), reference(data)),
      ),
    );
  });

  it('keeps bytes that are not UTF-8 as they were, and a character cut across reads whole', () => {
    const data = Buffer.concat([Buffer.from([0xff, 0xfe, 0x0a]), Buffer.from('🚀 x\n')]);
    assert.deepEqual(
      labelled(data, [1, 5]),
      Buffer.concat([Buffer.from('3: '), data.subarray(0, 3), Buffer.from('3: 🚀 x\n')]),
    );
  });

  it('cuts a line longer than MAX_LINE, so what waits for a newline stays bounded', () => {
    const label = new RankLabel('3: ');
    const chunk = Buffer.alloc(1024, 0x61);
    let out = Buffer.alloc(0);
    for (let i = 0; i < 200; i++) out = Buffer.concat([out, label.write(chunk)]);
    out = Buffer.concat([out, label.end()]);
    const lines = out
      .toString('latin1')
      .split('\n')
      .filter((l) => l !== '');
    assert.ok(lines.length >= 3, `${lines.length} lines`);
    assert.ok(lines.every((l) => l.startsWith('3: ') && l.length <= 3 + MAX_LINE + chunk.length));
    assert.equal(lines.map((l) => l.slice(3)).join(''), 'a'.repeat(200 * 1024), 'every byte, once');
  });
});
