/** `queueHistory` in berth.yaml: its defaults, its values, and the key each mistake names. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveConfig, validateConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/domain/errors.js';

const FILE = '/etc/berth/berth.yaml';
const history = (queueHistory: unknown) =>
  resolveConfig(validateConfig({ queueHistory }, FILE), {}, FILE).queueHistory;
/** The settings are refused with a ConfigError whose message matches `message`. */
const refused = (queueHistory: unknown, message: RegExp) =>
  assert.throws(
    () => history(queueHistory),
    (e: unknown) => e instanceof ConfigError && message.test(e.message),
  );

describe('configuration: queueHistory', () => {
  it('samples every 10 s and keeps 6 hours by default', () => {
    assert.deepEqual(history(undefined), { sampleSeconds: 10, keepSeconds: 6 * 3600 });
  });

  it('reads fractions of a second and a duration or seconds', () => {
    assert.deepEqual(history({ sampleSeconds: 0.2, keep: '10m' }), {
      sampleSeconds: 0.2,
      keepSeconds: 600,
    });
    assert.equal(history({ keep: 86_400 }).keepSeconds, 86_400);
  });

  it('names the key of each mistake', () => {
    refused({ keep: 'a while' }, /queueHistory\.keep: "a while" is not a duration/);
    refused({ sampleSeconds: 5, keep: 2 }, /queueHistory\.keep: must be at least/);
    // More than 100,000 samples per queue: named by the key that was set.
    refused({ sampleSeconds: 0.1 }, /queueHistory\.sampleSeconds: .*216000 samples/);
    refused({ sampleSeconds: 1, keep: '30d' }, /queueHistory\.keep: .*at most 100000 are kept/);
    assert.throws(
      () => validateConfig({ queueHistory: { sampleSeconds: 0 } }, FILE),
      /queueHistory\.sampleSeconds/,
    );
    assert.throws(
      () => validateConfig({ queueHistory: { every: 5 } }, FILE),
      /queueHistory\.every: unknown key/,
    );
  });
});
