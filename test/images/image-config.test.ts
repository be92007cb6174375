/**
 * A job's command and environment in an image (images/image-config.ts), as `docker run IMAGE
 * CMD…` combines them: a table.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { imageCommand, imageEnv, parseImageConfig } from '../../src/images/image-config.js';

describe("an image's config", () => {
  const image = parseImageConfig({
    config: {
      Entrypoint: ['/bin/tini', '--'],
      Cmd: ['serve'],
      Env: ['PATH=/bin', 'A=image'],
      WorkingDir: '/app',
      User: '1000',
    },
  });

  it('reads what the image says, and an empty one as empty', () => {
    assert.deepEqual(image, {
      entrypoint: ['/bin/tini', '--'],
      cmd: ['serve'],
      env: ['PATH=/bin', 'A=image'],
      workingDir: '/app',
      user: '1000',
    });
    assert.deepEqual(parseImageConfig({}), { entrypoint: [], cmd: [], env: [], workingDir: '/', user: '' });
    assert.deepEqual(parseImageConfig({ config: { Cmd: 'not a list', WorkingDir: 'relative' } }).cmd, []);
    assert.equal(parseImageConfig({ config: { WorkingDir: 'relative' } }).workingDir, '/');
  });

  const commands: [
    string,
    Parameters<typeof parseImageConfig>[0],
    string[] | undefined,
    string[] | undefined,
  ][] = [
    [
      'entrypoint + the job’s command (replaces Cmd)',
      { config: { Entrypoint: ['e'], Cmd: ['c'] } },
      ['j', '1'],
      ['e', 'j', '1'],
    ],
    [
      'entrypoint + Cmd when the job gives none',
      { config: { Entrypoint: ['e'], Cmd: ['c'] } },
      undefined,
      ['e', 'c'],
    ],
    ['Cmd alone', { config: { Cmd: ['c', 'x'] } }, [], ['c', 'x']],
    ['the job’s command alone', { config: {} }, ['j'], ['j']],
    ['nothing to run', { config: {} }, undefined, undefined],
  ];
  for (const [what, config, own, argv] of commands)
    it(`runs ${what}`, () => assert.deepEqual(imageCommand(parseImageConfig(config), own), argv));

  it("lays the job's environment over the image's", () => {
    assert.deepEqual(imageEnv(image, { A: 'job', B: 'job' }), { PATH: '/bin', A: 'job', B: 'job' });
    assert.deepEqual(imageEnv(parseImageConfig({ config: { Env: ['X=a=b', 'broken', '=v'] } }), {}), {
      X: 'a=b',
    });
  });
});
