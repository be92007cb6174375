/** Checks shared by the sections of berth.yaml: each names the key it refuses. */
import { dirname, resolve as resolvePath } from 'node:path';
import { parseDuration } from '../domain/duration.js';
import { ConfigError } from '../domain/errors.js';
import { DNS_LABEL, DNS_LABEL_HELP } from '../domain/names.js';
import { parseAmount } from '../domain/quantity.js';

/** A factory's, target's or resource type's name: a DNS label. */
export function checkName(key: string, name: string, file?: string): void {
  if (!DNS_LABEL.test(name)) throw new ConfigError(key, `"${name}" ${DNS_LABEL_HELP}`, file);
}

/** A duration setting (`90m`, `2h`, `1d12h`, or seconds) in whole seconds; undefined when not set. */
export function durationSetting(
  key: string,
  value: string | number | undefined,
  file?: string,
): number | undefined {
  const seconds = typeof value === 'string' ? parseDuration(value) : value;
  if (seconds === undefined && value !== undefined)
    throw new ConfigError(key, `"${value}" is not a duration (90m, 2h, 1d12h, or seconds)`, file);
  // As the schema asks of a number: no setting of berth's means anything at zero.
  if (seconds === 0) throw new ConfigError(key, `"${value}" must be at least 1s`, file);
  return seconds;
}

/** A quantity of `resource` (`500m`, `2`, `16Gi`), as domain/quantity.ts parses a request's. */
export function quantitySetting(
  key: string,
  resource: string,
  value: string | number,
  file?: string,
): number {
  try {
    return parseAmount(resource, value);
  } catch {
    throw new ConfigError(
      key,
      `${JSON.stringify(value)} is not a quantity (a non-negative number with an optional suffix: 500m, 2, 16Gi, 10G)`,
      file,
    );
  }
}

/** A size setting (`100Mi`, `1G`, or a number of bytes) in bytes; undefined when not set. */
export function bytesSetting(
  key: string,
  value: string | number | undefined,
  file?: string,
): number | undefined {
  if (value === undefined) return undefined;
  try {
    return parseAmount('bytes', value);
  } catch {
    throw new ConfigError(key, `"${value}" is not a size in bytes (100Mi, 1G, or a number)`, file);
  }
}

/** A path in berth.yaml, relative to the file's folder (as for exec wells' programs). */
export const fromConfigDir = (path: string, file?: string): string =>
  resolvePath(file ? dirname(file) : '.', path);
