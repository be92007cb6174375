/**
 * A command looked up in an image's files from outside (images/image-lookup.ts), as execvp would
 * inside: on a real directory tree with links, as an unpacked image has them.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { lookupInImage, resolveInImage } from '../../src/images/image-lookup.js';
import { scratchDir } from '../helpers/scratch.js';

describe("a command looked up in an image's files", () => {
  let root: string;
  before(() => {
    root = join(scratchDir('berth-image-lookup-'), 'rootfs');
    for (const d of ['usr/bin', 'opt/app', 'private', 'etc']) mkdirSync(join(root, d), { recursive: true });
    chmodSync(root, 0o755);
    for (const d of ['usr', 'usr/bin', 'opt', 'opt/app', 'etc']) chmodSync(join(root, d), 0o755);
    chmodSync(join(root, 'private'), 0o700);
    const file = (path: string, mode: number) => {
      writeFileSync(join(root, path), '#!\n');
      chmodSync(join(root, path), mode);
    };
    file('usr/bin/tool', 0o755);
    file('usr/bin/plain', 0o644);
    file('opt/app/run', 0o755);
    file('private/secret-tool', 0o755);
    file('etc/mine', 0o700); // its owner's (root's) alone
    symlinkSync('usr/bin', join(root, 'bin')); // merged /usr, relative
    symlinkSync('/usr/bin/tool', join(root, 'opt/app/abs')); // absolute: the image's root, not the host's
    symlinkSync('/usr/bin/node', join(root, 'opt/app/host')); // the host has node; the image does not
    symlinkSync('../../../../../../usr/bin/tool', join(root, 'opt/app/up')); // .. never above its root
    symlinkSync('loop', join(root, 'opt/app/loop'));
  });
  after(() => rmSync(join(root, '..'), { recursive: true, force: true }));

  it('follows links inside the image, never out to the host', () => {
    assert.equal(resolveInImage(root, '/bin/tool'), join(root, 'usr/bin/tool'));
    assert.equal(resolveInImage(root, '/opt/app/abs'), join(root, 'usr/bin/tool'));
    assert.equal(resolveInImage(root, '/opt/app/up'), join(root, 'usr/bin/tool'));
    assert.equal(
      resolveInImage(root, '/opt/app/host'),
      undefined,
      "the host's /usr/bin/node is not the image's",
    );
    assert.equal(resolveInImage(root, '/opt/app/loop'), undefined);
  });

  it('finds as execvp: on PATH in order, a name with a slash as it is; ENOENT and EACCES as exec says them', () => {
    for (const [file, path, want] of [
      ['tool', '/bin', undefined],
      ['tool', undefined, undefined], // the default PATH
      ['run', '/usr/bin:/opt/app', undefined],
      ['nope', '/usr/bin:/opt/app', 'ENOENT'],
      ['plain', '/usr/bin', 'EACCES'], // not executable
      ['plain', '/usr/bin:/opt/app', 'EACCES'],
      ['secret-tool', '/private', 'EACCES'], // in a directory only root may search
      ['/etc/mine', undefined, 'EACCES'], // only its owner may run it
      ['/opt/app/abs', undefined, undefined],
      ['/opt/app/host', undefined, 'ENOENT'],
      ['/usr/bin', undefined, 'EACCES'], // a directory
      ['', undefined, 'ENOENT'],
    ] as const)
      assert.equal(lookupInImage(root, file, path), want, `${file} on ${path}`);
  });
});
