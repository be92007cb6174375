/**
 * Option parsers shared by commands. They throw commander's InvalidArgumentError, so a bad value
 * is reported like any other usage error: one line, exit code 2.
 */
import { InvalidArgumentError } from 'commander';
import { BerthError } from '../domain/errors.js';
import { checkName, RESOURCE_NAME, RESOURCE_NAME_HELP } from '../domain/names.js';
import { parseAmount } from '../domain/quantity.js';

const rethrow = (err: unknown): never => {
  if (err instanceof BerthError) throw new InvalidArgumentError(err.message);
  throw err;
};

/**
 * `cpu=8,memory=32Gi,jobs=10` → `{cpu: "8", memory: "32Gi", jobs: "10"}`, each quantity checked.
 * Repeating the flag adds to the map; an empty value gives an empty map.
 */
export function quantityList(
  value: string,
  previous: Record<string, string> | undefined,
): Record<string, string> {
  const out: Record<string, string> = { ...previous };
  for (const item of value.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq <= 0) throw new InvalidArgumentError(`expected RESOURCE=QUANTITY, got "${item}"`);
    const resource = item.slice(0, eq).trim();
    const quantity = item.slice(eq + 1).trim();
    if (resource in out) throw new InvalidArgumentError(`${resource} is given twice`);
    try {
      checkName(RESOURCE_NAME, RESOURCE_NAME_HELP, 'resource', resource);
      parseAmount(resource, quantity, resource);
    } catch (err) {
      rethrow(err);
    }
    out[resource] = quantity;
  }
  return out;
}

/** A repeatable flag; each value may also be a comma-separated list (`--tag a --tag b,c`). */
export function repeatable(value: string, previous: string[] | undefined): string[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw new InvalidArgumentError('must not be empty');
  return [...(previous ?? []), ...items];
}
