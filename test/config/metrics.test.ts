/** `metrics` in berth.yaml: per-project series off by default, on when asked, and each mistake named. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveConfig, validateConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/domain/errors.js';

const FILE = '/etc/berth/berth.yaml';
const resolved = (raw: Record<string, unknown>) => resolveConfig(validateConfig(raw, FILE), {}, FILE).metrics;
/** Refused with a ConfigError that names `key` in `FILE`. */
const refused = (metrics: unknown, message: RegExp) =>
  assert.throws(
    () => validateConfig({ metrics }, FILE),
    (e: unknown) => e instanceof ConfigError && message.test(e.message) && e.message.includes(FILE),
  );

describe('configuration: metrics', () => {
  it('keeps no per-project series unless asked', () => {
    assert.deepEqual(resolved({}), { perProject: false });
    assert.deepEqual(resolved({ metrics: {} }), { perProject: false });
    assert.deepEqual(resolved({ metrics: { perProject: true } }), { perProject: true });
  });

  it('names the key of each mistake', () => {
    refused({ perProject: 'yes' }, /metrics\.perProject: expected boolean/);
    refused({ perProjects: true }, /metrics\.perProjects: unknown key/);
    refused('on', /metrics: expected object/);
  });
});
