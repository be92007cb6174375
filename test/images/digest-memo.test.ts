/**
 * What a tag stands for, asked once for many jobs (images/digest-memo.ts): the question a
 * registry would be asked is a function here that counts its calls — the real registry's answers
 * are tested in image-cache.test.ts and image-jobs.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DigestMemo } from '../../src/images/digest-memo.js';
import { parseImageReference } from '../../src/images/reference.js';

const A = `sha256:${'a'.repeat(64)}`;
const B = `sha256:${'b'.repeat(64)}`;

/** A registry whose tag `app:1` stands for `answer`; `asked` counts the questions. */
function registry(answer: () => string) {
  const r = {
    asked: 0,
    ask: async () => {
      r.asked++;
      await Promise.resolve();
      return answer();
    },
  };
  return r;
}

describe('the digest a tag stands for, asked once for many jobs', () => {
  const ref = parseImageReference('127.0.0.1:5000/team/app:1');

  it('asks once for jobs that ask at the same time, and keeps the answer for its time', async () => {
    let now = 0;
    let current = A;
    const reg = registry(() => current);
    const memo = new DigestMemo(reg.ask, 10_000, () => now);
    assert.deepEqual(
      await Promise.all([memo.resolve(ref, 'p'), memo.resolve(ref, 'p'), memo.resolve(ref, 'p')]),
      [A, A, A],
    );
    assert.equal(reg.asked, 1);
    current = B; // the tag moves
    now = 9_999;
    assert.equal(await memo.resolve(ref, 'p'), A, 'within its time: the kept answer');
    now = 10_000;
    assert.equal(await memo.resolve(ref, 'p'), B, 'past it: asked again');
    assert.equal(reg.asked, 2);
  });

  it('asks every time with no time to keep, for a digest too, and keeps no failure', async () => {
    const reg = registry(() => A);
    const memo = new DigestMemo(reg.ask, 0);
    await memo.resolve(ref, 'p');
    await memo.resolve(ref, 'p');
    assert.equal(reg.asked, 2);
    await memo.resolve(parseImageReference(`127.0.0.1:5000/team/app@${B}`), 'p');
    assert.equal(reg.asked, 3, 'a digest is asked too: whether the project may read it');
    let fail = true;
    const flaky = new DigestMemo(async () => {
      if (fail) throw new Error('registry down');
      return A;
    }, 10_000);
    await assert.rejects(flaky.resolve(ref, 'p'), /registry down/);
    fail = false;
    assert.equal(await flaky.resolve(ref, 'p'), A, 'the failure was not kept');
  });

  it('asks for each project apart: their logins differ', async () => {
    const asked: string[] = [];
    const memo = new DigestMemo(async (_ref, project) => {
      asked.push(project);
      await Promise.resolve();
      return A;
    }, 10_000);
    await Promise.all([memo.resolve(ref, 'a'), memo.resolve(ref, 'b'), memo.resolve(ref, 'a')]);
    assert.deepEqual(asked.sort(), ['a', 'b']);
  });
});
