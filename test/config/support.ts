/** The config tests' shared steps: resolve a raw config as the server does, and read its refusal. */
import assert from 'node:assert/strict';
import { resolveConfig, validateConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { ConfigError } from '../../src/domain/errors.js';

/** `raw` validated and resolved as if read from `file`, with no command-line overrides. */
export const resolveAs =
  (file: string) =>
  (raw: unknown): Config =>
    resolveConfig(validateConfig(raw, file), {}, file);

/** The message of the ConfigError that resolving `raw` (as if from `file`) gives. */
export function failureAs(file: string): (raw: unknown) => string {
  const resolve = resolveAs(file);
  return (raw) => {
    try {
      resolve(raw);
    } catch (e) {
      assert.ok(e instanceof ConfigError, `not a ConfigError: ${String(e)}`);
      return e.message;
    }
    assert.fail('no error');
  };
}
