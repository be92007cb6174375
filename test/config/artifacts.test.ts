/** `artifacts` in berth.yaml: its defaults, its values, and the key each mistake names. */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/domain/errors.js';
import { failureAs, resolveAs } from './support.js';
import { startTestServer } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';

const FILE = '/etc/berth/berth.yaml';
const resolve = resolveAs(FILE);
const failure = failureAs(FILE);

const scratch = scratchDir('berth-config-artifacts-');
after(() => rmSync(scratch, { recursive: true, force: true }));

describe('configuration: artifacts', () => {
  it('keeps them in DATA_DIR/artifacts, 100 MiB and 1000 files per run, for 30 days, by default', () => {
    assert.deepEqual(resolve({}).artifacts, {
      dir: null,
      maxBytesPerJob: 100 * 2 ** 20,
      maxFilesPerJob: 1000,
      retentionSeconds: 30 * 86_400,
    });
  });

  it('reads a directory relative to the file, a size as a quantity or bytes, a duration', () => {
    const a = resolve({
      artifacts: { dir: 'kept', maxBytesPerJob: '1G', maxFilesPerJob: 50, retention: '12h' },
    }).artifacts;
    assert.deepEqual(a, {
      dir: '/etc/berth/kept',
      maxBytesPerJob: 1e9,
      maxFilesPerJob: 50,
      retentionSeconds: 43_200,
    });
    assert.equal(resolve({ artifacts: { maxFilesPerJob: 0 } }).artifacts.maxFilesPerJob, 0);
    assert.equal(
      resolve({ artifacts: { maxBytesPerJob: 4096, retention: 60 } }).artifacts.maxBytesPerJob,
      4096,
    );
    assert.equal(resolve({ artifacts: { dir: '/srv/artifacts' } }).artifacts.dir, '/srv/artifacts');
  });

  it('names the key of each mistake', () => {
    assert.match(
      failure({ artifacts: { maxBytesPerJob: 'lots' } }),
      /^\/etc\/berth\/berth\.yaml: artifacts\.maxBytesPerJob: "lots" is not a size in bytes/,
    );
    assert.match(
      failure({ artifacts: { retention: 'soon' } }),
      /artifacts\.retention: "soon" is not a duration/,
    );
    assert.throws(
      () => validateConfig({ artifacts: { maxBytesPerJob: -1 } }, FILE),
      /artifacts\.maxBytesPerJob/,
    );
    for (const bad of [-1, 1.5, '10'])
      assert.throws(
        () => validateConfig({ artifacts: { maxFilesPerJob: bad } }, FILE),
        /artifacts\.maxFilesPerJob/,
      );
    assert.throws(() => validateConfig({ artifacts: { keep: true } }, FILE), /artifacts\.keep: unknown key/);
    assert.throws(() => validateConfig({ artifacts: { dir: '' } }, FILE), /artifacts\.dir/);
  });

  it('stops the server, naming artifacts.dir, when the directory cannot be made', async () => {
    const file = join(scratch, 'a-file');
    writeFileSync(file, '');
    await assert.rejects(
      startTestServer({ config: `artifacts:\n  dir: ${join(file, 'artifacts')}\n` }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError, String(e));
        assert.match(e.message, /artifacts\.dir: cannot make directory .*: ENOTDIR$/);
        return true;
      },
    );
  });
});
