/**
 * Finds the first value (or object key) in parsed request data that a check refuses, as the JSON
 * pointer Ajv names fields by (`/env/FOO`), so that every such check reports the field the same
 * way. Iterative, and no deeper than MAX_DEPTH, so a deeply nested body costs no stack and gives
 * no endless field name.
 */

/** Deeper than any schema of the API goes: data below it is refused by Ajv for its type anyway. */
const MAX_DEPTH = 32;

/** `key` as a JSON pointer's segment (RFC 6901). */
const segment = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** Where a refused value is: its pointer, or its object's when the refused thing is a key. */
export interface Found {
  path: string;
  /** A key of the object at `path` was refused, not a value. */
  inKey: boolean;
}

/**
 * The first value for which `refuse` is true, or the first object key for which `refuseKey` is;
 * undefined when there is none.
 */
export function findPath(
  data: unknown,
  refuse: (value: unknown) => boolean,
  refuseKey: (key: string) => boolean = () => false,
): Found | undefined {
  const stack: [unknown, string, number][] = [[data, '', 0]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [value, path, depth] = item;
    if (refuse(value)) return { path, inKey: false };
    if (typeof value !== 'object' || value === null || depth === MAX_DEPTH) continue;
    for (const [key, child] of Object.entries(value)) {
      if (refuseKey(key)) return { path, inKey: true };
      stack.push([child, `${path}/${segment(key)}`, depth + 1]);
    }
  }
  return undefined;
}
