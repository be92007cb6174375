/**
 * Kubernetes resource quantities ("500m", "16Gi", "1.5", "2e3", plain integers).
 *
 * Amounts are kept as integers, following Kueue: `cpu` is counted in millicores, every other
 * resource in whole units (a fractional amount rounds up, as Kubernetes' Quantity.Value() does).
 * Integers keep quota arithmetic exact and fast in the scheduler; a JavaScript number holds every
 * integer up to 2^53, i.e. 8 PiB of memory or 9 billion cores.
 */
import { BadRequestError } from './errors.js';

/** Resources counted in thousandths. */
const MILLI_RESOURCES = new Set(['cpu']);

const BINARY_SUFFIXES: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL_SUFFIXES: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const QUANTITY = /^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$/;

/** A quantity as a user wrote it, in JSON: a string or a non-negative number. */
export type QuantityInput = string | number;

export function isMilliResource(resource: string): boolean {
  return MILLI_RESOURCES.has(resource);
}

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/**
 * Parses `input` into the integer amount used for accounting `resource`.
 * Throws BadRequestError naming `what` (e.g. "quota.cpu") when it is not a valid quantity.
 */
export function parseAmount(resource: string, input: QuantityInput, what = resource): number {
  const text = typeof input === 'number' ? numberText(input, what) : input.trim();
  const match = QUANTITY.exec(text);
  if (!match) {
    throw new BadRequestError(
      `${what}: ${JSON.stringify(input)} is not a quantity (use a non-negative number with an optional suffix, e.g. 500m, 2, 1.5, 16Gi, 10G)`,
    );
  }
  const [, mantissa = '', suffix = ''] = match;
  const [intPart = '', fracPart = ''] = mantissa.split('.');
  const digits = BigInt((intPart || '0') + fracPart);
  let twos = 0;
  let tens = -fracPart.length + (isMilliResource(resource) ? 3 : 0);
  if (suffix in BINARY_SUFFIXES) twos = BINARY_SUFFIXES[suffix] ?? 0;
  else if (suffix.startsWith('e') || suffix.startsWith('E')) {
    if (suffix.length > 1 && /^[eE][+-]?[0-9]+$/.test(suffix)) tens += Number(suffix.slice(1));
    else tens += DECIMAL_SUFFIXES[suffix] ?? 0;
  } else tens += DECIMAL_SUFFIXES[suffix] ?? 0;
  if (digits === 0n) return 0;
  // Any non-zero amount times 10^61 is beyond 2^53; anything this far below one unit rounds up to
  // one. Both checks keep a long exponent from making a huge power of ten.
  if (tens > 60) throw tooLarge(what, input);
  if (-tens > 60 + digits.toString().length) return 1;
  let numerator = digits << BigInt(twos);
  let denominator = 1n;
  if (tens >= 0) numerator *= pow10(tens);
  else denominator = pow10(-tens);
  const amount = (numerator + denominator - 1n) / denominator; // round up
  if (amount > BigInt(Number.MAX_SAFE_INTEGER)) throw tooLarge(what, input);
  return Number(amount);
}

function numberText(n: number, what: string): string {
  if (!Number.isFinite(n) || n < 0) {
    throw new BadRequestError(`${what}: ${n} is not a quantity (it must be a non-negative number)`);
  }
  // Exponent notation for very large or small numbers is valid quantity syntax too.
  return String(n).replace('e+', 'e');
}

function tooLarge(what: string, input: QuantityInput): BadRequestError {
  return new BadRequestError(`${what}: ${JSON.stringify(input)} is too large`);
}

const BINARY_DISPLAY: [string, number][] = [
  ['Ei', 2 ** 60],
  ['Pi', 2 ** 50],
  ['Ti', 2 ** 40],
  ['Gi', 2 ** 30],
  ['Mi', 2 ** 20],
  ['Ki', 2 ** 10],
];

/** Formats an accounting amount back into quantity syntax: 1500 (cpu) → "1500m", 2^34 → "16Gi". */
export function formatAmount(resource: string, amount: number): string {
  if (isMilliResource(resource)) {
    return amount % 1000 === 0 ? String(amount / 1000) : `${amount}m`;
  }
  if (amount >= 1024) {
    for (const [suffix, size] of BINARY_DISPLAY) {
      if (amount % size === 0) return `${amount / size}${suffix}`;
    }
  }
  return String(amount);
}

/** A map of resource name → amount, the unit of all quota arithmetic. */
export type Amounts = Record<string, number>;

/** Parses a map of quantities, naming each bad entry as `${what}.${resource}`. */
export function parseAmounts(input: Record<string, QuantityInput>, what: string): Amounts {
  const out: Amounts = {};
  for (const [resource, value] of Object.entries(input)) {
    out[resource] = parseAmount(resource, value, `${what}.${resource}`);
  }
  return out;
}

export function formatAmounts(amounts: Amounts): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [resource, amount] of Object.entries(amounts)) out[resource] = formatAmount(resource, amount);
  return out;
}
