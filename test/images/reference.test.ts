/**
 * Image references parsed and written out as `docker pull` reads them (images/reference.ts): a
 * table of the forms users write, the mistakes they make, and a property: what is written out
 * parses back to itself.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  formatImageReference,
  ImageReferenceError,
  isLoopbackRegistry,
  parseImageReference,
} from '../../src/images/reference.js';

const DIGEST = `sha256:${'ab'.repeat(32)}`;

describe('an image reference', () => {
  const cases: [string, string][] = [
    ['busybox', 'docker.io/library/busybox:latest'],
    ['busybox:1.36', 'docker.io/library/busybox:1.36'],
    ['team/tool', 'docker.io/team/tool:latest'],
    ['127.0.0.1:5000/busybox:1', '127.0.0.1:5000/busybox:1'],
    ['localhost/a/b/c:v1.2-rc_3', 'localhost/a/b/c:v1.2-rc_3'],
    ['registry.example.org/ml/pytorch:2.1-cuda12', 'registry.example.org/ml/pytorch:2.1-cuda12'],
    [`127.0.0.1:5000/busybox@${DIGEST}`, `127.0.0.1:5000/busybox@${DIGEST}`],
    [`127.0.0.1:5000/busybox:1@${DIGEST}`, `127.0.0.1:5000/busybox:1@${DIGEST}`],
    ['[::1]:5000/x', '[::1]:5000/x:latest'],
    ['a__b/c-d/e.f', 'docker.io/a__b/c-d/e.f:latest'],
  ];
  for (const [text, full] of cases)
    it(`reads ${text} as ${full}`, () => assert.equal(formatImageReference(parseImageReference(text)), full));

  const wrong: [string, RegExp][] = [
    ['', /empty/],
    ['Busybox', /not a repository name component/],
    ['busybox:', /tag "" is not/],
    ['busybox:-x', /tag "-x" is not/],
    ['busybox@sha256:abc', /digest "sha256:abc" is not sha256: and 64/],
    [`busybox@md5:${'a'.repeat(32)}`, /digest/],
    ['a//b', /empty path component/],
    ['example.org/', /empty path component/],
    ['bad_host.org:99/x', /registry "bad_host.org:99"/],
    ['busy box', /white space/],
    [`x/${'a'.repeat(300)}`, /longer than 255/],
  ];
  for (const [text, why] of wrong)
    it(`refuses ${JSON.stringify(text)}, saying why`, () =>
      assert.throws(
        () => parseImageReference(text),
        (e: unknown) =>
          e instanceof ImageReferenceError && why.test(e.message) && e.message.includes(JSON.stringify(text)),
      ));

  it('writes out what parses back to itself', () => {
    const component = fc.stringMatching(/^[a-z0-9]{1,8}(?:[._-][a-z0-9]{1,8})?$/);
    const registry = fc.oneof(
      fc.constant('docker.io'),
      fc.integer({ min: 1, max: 65535 }).map((p) => `127.0.0.1:${p}`),
      fc.constant('registry.example.org'),
    );
    const tag = fc.option(fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}$/), { nil: undefined });
    const digest = fc.option(
      fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => `sha256:${h}`),
      { nil: undefined },
    );
    fc.assert(
      fc.property(
        registry,
        fc.array(component, { minLength: 1, maxLength: 3 }),
        tag,
        digest,
        (r, path, t, d) => {
          const text = `${r}/${path.join('/')}${t ? `:${t}` : ''}${d ? `@${d}` : ''}`;
          const once = parseImageReference(text);
          assert.deepEqual(parseImageReference(formatImageReference(once)), once);
          if (d) assert.equal(once.digest, d);
        },
      ),
    );
  });

  it('speaks plain HTTP only to the loopback unless told', () => {
    for (const r of ['127.0.0.1:5000', '127.1.2.3', 'localhost:5000', '[::1]:5000'])
      assert.equal(isLoopbackRegistry(r), true, r);
    for (const r of ['docker.io', '10.0.0.1:5000', '128.0.0.1', 'localhost.example.org', '127.0.0.1.nip.io'])
      assert.equal(isLoopbackRegistry(r), false, r);
  });
});
