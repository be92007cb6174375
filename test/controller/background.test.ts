import assert from 'node:assert/strict';
import { it } from 'node:test';
import { BackgroundWork } from '../../src/controller/background.js';

/** A promise and the hands that settle it. */
function deferred() {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

it('reports a failure with what it was, and counts work until it settles', async () => {
  const reports: string[] = [];
  const work = new BackgroundWork((e, what) => reports.push(`${what}: ${(e as Error).message}`));
  const a = deferred();
  const b = deferred();
  work.run(a.promise, 'factory:local for job 1');
  work.run(b.promise, 'job 2');
  assert.equal(work.size, 2);
  a.reject(new Error('no room'));
  b.resolve();
  assert.equal(await work.settled(10_000), true);
  assert.equal(work.size, 0);
  assert.deepEqual(reports, ['factory:local for job 1: no room']);
});

it('waits for work started while it waits', async () => {
  const work = new BackgroundWork(() => {});
  const first = deferred();
  const second = deferred();
  work.run(first.promise, 'first');
  const settled = work.settled(10_000);
  void first.promise.then(() => {
    work.run(second.promise, 'second'); // started by the first one's end, as a run's end starts a destroy
    setImmediate(second.resolve);
  });
  let done = false;
  void settled.then(() => (done = true));
  first.resolve();
  await first.promise;
  assert.equal(done, false);
  assert.equal(await settled, true);
  assert.equal(work.size, 0);
});

it('gives up after its bound, and leaves the work going', async () => {
  const work = new BackgroundWork(() => {});
  const hung = deferred();
  const tracked = work.track(hung.promise);
  assert.equal(await work.settled(20), false);
  assert.equal(work.size, 1);
  hung.resolve();
  await tracked;
  assert.equal(await work.settled(0), true);
});

it('settles at once with nothing under way', async () => {
  assert.equal(await new BackgroundWork(() => {}).settled(0), true);
});
