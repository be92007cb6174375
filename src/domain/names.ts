/** Name rules shared by the API, the config loader and the CLI. */
import { BadRequestError } from './errors.js';

/** RFC 1123 label, as Kubernetes namespaces: what project, queue, target and factory names are. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
export const DNS_LABEL_HELP =
  'must be a DNS label: 1-63 lowercase letters, digits or "-", starting and ending with a letter or digit';

/**
 * The names every plain JavaScript object answers to (`constructor`, `hasOwnProperty`, `toString`,
 * `__proto__`, …). Refused as resource names: one of them as a key of an object built from user
 * input once found the inherited method, and `+` made the usage rollups text (issue #40). Maps
 * keyed by such input are `Map`s or null-prototype objects (`dictionary`) as well; refusing the
 * names keeps every other reader safe too (the CLI's, the dashboard's, a script's).
 */
export const OBJECT_MEMBERS: readonly string[] = [
  ...Object.getOwnPropertyNames(Object.prototype),
  '__proto__',
];

/** An object with no prototype: a key from outside finds only what was put there. */
export function dictionary<T>(entries?: Iterable<readonly [string, T]>): Record<string, T> {
  const out = Object.create(null) as Record<string, T>;
  for (const [k, v] of entries ?? []) out[k] = v;
  return out;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Resource names in quotas and requests: Kubernetes qualified names such as `nvidia.com/gpu`,
 * none of OBJECT_MEMBERS.
 */
export const RESOURCE_NAME = new RegExp(
  `^(?!(?:${OBJECT_MEMBERS.map(escape).join('|')})$)` +
    /([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.source,
);
export const RESOURCE_NAME_HELP =
  'must be a resource name such as cpu, memory or nvidia.com/gpu (letters, digits, "-", "_", "." and one optional "prefix/"), and not a name every JavaScript object has (constructor, hasOwnProperty, toString, valueOf, …)';

/** User names: lowercase, digits, ".", "_" and "-". */
export const USER_NAME = /^[a-z0-9]([-a-z0-9._]{0,61}[a-z0-9])?$/;
export const USER_NAME_HELP =
  'must be 1-63 lowercase letters, digits, ".", "_" or "-", starting and ending with a letter or digit';

/** Privileges such as `target.gpu` or `resource.scratch-db`. */
export const PRIVILEGE = /^[a-z0-9]([-a-z0-9._/]{0,251}[a-z0-9])?$/;
export const PRIVILEGE_HELP =
  'must be lowercase letters, digits, ".", "_", "/" or "-", e.g. target.gpu or resource.scratch-db';

/**
 * Control characters (C0 and DEL): refused in job names and in artifacts' patterns and names. They
 * would garble a listing in a terminal, a log line, a path or a Content-Disposition header.
 */
// eslint-disable-next-line no-control-regex
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;
/** Text without a control character, as a JSON Schema pattern (the API's job names). */
export const NO_CONTROL_CHARACTER = `^[^${CONTROL_CHARACTER.source.slice(1, -1)}]*$`;
export const NO_CONTROL_CHARACTER_HELP = 'must not contain control characters (U+0000 to U+001F, U+007F)';

export function checkName(pattern: RegExp, help: string, what: string, value: string): string {
  if (!pattern.test(value)) throw new BadRequestError(`${what} ${JSON.stringify(value)} ${help}`);
  return value;
}

export const checkDnsLabel = (what: string, value: string): string =>
  checkName(DNS_LABEL, DNS_LABEL_HELP, what, value);
