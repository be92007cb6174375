/**
 * The box that seals the secrets berth keeps (store/secret-box.ts): what it seals opens only with
 * its key and for what it was sealed for; its key file is made once, the server's alone, and one
 * others may read is refused. Real files.
 */
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { SealedValueError, SecretBox, SecretKeyError } from '../../src/store/secret-box.js';
import { scratchDir } from '../helpers/scratch.js';

describe('the secret box', () => {
  const dir = scratchDir('berth-secret-box-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('makes its key once, 0600, and opens what it sealed for the same owner only', () => {
    const file = join(dir, 'secret.key');
    const box = SecretBox.open(file, true);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const key = readFileSync(file, 'utf8');
    assert.equal(readFileSync(file, 'utf8'), key, 'not made again');
    const sealed = box.seal('hunter2', 'ml/registry');
    assert.doesNotMatch(sealed, /hunter2/);
    assert.notEqual(box.seal('hunter2', 'ml/registry'), sealed, 'a new nonce each time');
    assert.equal(
      SecretBox.open(file, true).unseal(sealed, 'ml/registry'),
      'hunter2',
      'the same key, reopened',
    );
    assert.throws(() => box.unseal(sealed, 'other/registry'), SealedValueError, 'moved to another owner');
    const [v, nonce, tag, body] = sealed.split('.');
    const flipped = `${body![0] === 'A' ? 'B' : 'A'}${body!.slice(1)}`;
    assert.throws(
      () => box.unseal([v, nonce, tag, flipped].join('.'), 'ml/registry'),
      SealedValueError,
      'changed',
    );
    const other = SecretBox.open(join(dir, 'other.key'), true);
    assert.throws(() => other.unseal(sealed, 'ml/registry'), SealedValueError, 'another key');
  });

  it('refuses a key file it did not make and may not use: missing, readable by others, not a key', () => {
    assert.throws(() => SecretBox.open(join(dir, 'missing.key'), false), SecretKeyError);
    const open = join(dir, 'open.key');
    writeFileSync(open, Buffer.alloc(32, 1).toString('base64'));
    chmodSync(open, 0o644);
    assert.throws(
      () => SecretBox.open(open, false),
      /mode 0644 lets others read or write the key: chmod 600 it/,
    );
    const short = join(dir, 'short.key');
    writeFileSync(short, 'c2hvcnQ=', { mode: 0o600 });
    assert.throws(() => SecretBox.open(short, false), /not a key \(32 bytes, base64\): it holds 5/);
  });
});
