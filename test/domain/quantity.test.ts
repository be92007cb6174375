/** Kubernetes quantities: parsing into integer amounts and formatting back. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { BadRequestError } from '../../src/domain/errors.js';
import {
  formatAmount,
  formatAmounts,
  isMilliResource,
  parseAmount,
  parseAmounts,
  type QuantityInput,
} from '../../src/domain/quantity.js';

const MAX = Number.MAX_SAFE_INTEGER;

function rejects(resource: string, input: QuantityInput, message: RegExp, what?: string): void {
  assert.throws(
    () => parseAmount(resource, input, what),
    (e: unknown) => e instanceof BadRequestError && e.status === 400 && message.test(e.message),
    `${resource} ${JSON.stringify(input)}`,
  );
}

void describe('parseAmount: cpu in millicores', () => {
  const cases: [QuantityInput, number][] = [
    ['1', 1000],
    ['0', 0],
    ['500m', 500],
    ['0.5', 500],
    ['1.5', 1500],
    ['.25', 250],
    ['2.', 2000],
    ['1500m', 1500],
    ['0.0001', 1], // a tenth of a millicore rounds up
    ['100u', 1],
    ['1n', 1],
    ['999999n', 1],
    ['1000001n', 2],
    ['2k', 2_000_000],
    ['1M', 1_000_000_000],
    ['1e3', 1_000_000],
    ['1E3', 1_000_000],
    ['1e+3', 1_000_000],
    ['1e-3', 1],
    ['25e-3', 25],
    ['1Ki', 1_024_000],
    [0.5, 500],
    [2, 2000],
    [1e-9, 1],
    [0, 0],
  ];
  for (const [input, expected] of cases) {
    void test(`${JSON.stringify(input)} → ${expected}`, () =>
      assert.equal(parseAmount('cpu', input), expected));
  }
  void test('only cpu is counted in thousandths', () => {
    assert.equal(isMilliResource('cpu'), true);
    for (const r of ['memory', 'jobs', 'nvidia.com/gpu', 'CPU']) assert.equal(isMilliResource(r), false);
  });
});

void describe('parseAmount: other resources in whole units, rounded up', () => {
  const binary: [string, number][] = [
    ['Ki', 10],
    ['Mi', 20],
    ['Gi', 30],
    ['Ti', 40],
    ['Pi', 50],
  ];
  for (const [suffix, power] of binary) {
    void test(`1${suffix} and 3${suffix} are powers of two`, () => {
      assert.equal(parseAmount('memory', `1${suffix}`), 2 ** power);
      assert.equal(parseAmount('memory', `3${suffix}`), 3 * 2 ** power);
      assert.equal(parseAmount('memory', `0.5${suffix}`), 2 ** (power - 1));
    });
  }
  void test('Ei is 2^60, beyond exact integers unless tiny', () => {
    rejects('memory', '1Ei', /"1Ei" is too large/);
    assert.equal(parseAmount('memory', '0.000001Ei'), Math.ceil(2 ** 60 / 1e6));
  });

  const decimal: [string, number][] = [
    ['k', 3],
    ['M', 6],
    ['G', 9],
    ['T', 12],
    ['P', 15],
  ];
  for (const [suffix, power] of decimal) {
    void test(`1${suffix} is 10^${power}`, () => {
      assert.equal(parseAmount('memory', `1${suffix}`), 10 ** power);
      assert.equal(parseAmount('storage', `2.5${suffix}`), 2.5 * 10 ** power);
    });
  }
  void test('E is 10^18: too large for whole units, fine as a fraction', () => {
    rejects('memory', '1E', /too large/);
    assert.equal(parseAmount('memory', '0.001E'), 1e15);
  });
  void test('sub-unit suffixes round up to one unit', () => {
    for (const q of ['1m', '999m', '1u', '1n', '0.1', '1e-3', '1e-100'])
      assert.equal(parseAmount('jobs', q), 1, q);
    assert.equal(parseAmount('jobs', '1001m'), 2);
    assert.equal(parseAmount('jobs', '2000m'), 2);
    assert.equal(parseAmount('memory', '1.1Ki'), 1127); // 1126.4 rounds up
  });
  void test('zero is zero whatever its suffix or exponent', () => {
    for (const q of ['0', '0.0', '0m', '0Gi', '0E', '0e999', '0e-999', '.0'])
      assert.equal(parseAmount('memory', q), 0, q);
  });
  void test('exponents', () => {
    assert.equal(parseAmount('memory', '1e3'), 1000);
    assert.equal(parseAmount('memory', '1.5e3'), 1500);
    assert.equal(parseAmount('memory', '2E6'), 2_000_000);
    assert.equal(parseAmount('memory', '12e-1'), 2);
    assert.equal(parseAmount('memory', '1e15'), 1e15);
  });
  void test('numbers', () => {
    assert.equal(parseAmount('memory', 1024), 1024);
    assert.equal(parseAmount('memory', 1.5), 2);
    assert.equal(parseAmount('memory', 1e15), 1e15);
    assert.equal(parseAmount('memory', 1e-7), 1);
    assert.equal(parseAmount('memory', MAX), MAX);
  });
  void test('surrounding whitespace in a string is ignored', () => {
    assert.equal(parseAmount('memory', ' 2Gi '), 2 ** 31);
  });
  void test('very small amounts round up to one unit, however long the exponent or fraction', () => {
    assert.equal(parseAmount('memory', '1e-999999999'), 1);
    assert.equal(parseAmount('cpu', '0.' + '0'.repeat(200) + '1'), 1);
    assert.equal(parseAmount('memory', '1.' + '0'.repeat(200)), 1);
    assert.equal(parseAmount('memory', '2.' + '0'.repeat(200) + '1'), 3);
  });
  void test('the largest exact integer is accepted, one more is too large', () => {
    assert.equal(parseAmount('memory', String(MAX)), MAX);
    rejects('memory', String(MAX + 1), /too large/);
    assert.equal(parseAmount('cpu', `${MAX}m`), MAX);
    rejects('cpu', `${MAX + 1}m`, /too large/);
    rejects('cpu', String(Math.ceil(MAX / 1000) + 1), /too large/);
  });
});

void describe('parseAmount: rejections', () => {
  const notQuantities = [
    '',
    ' ',
    '8x',
    '-1',
    '+1',
    '1.2.3',
    '.',
    '1e',
    'e3',
    'Gi',
    '1 Gi',
    '1gi',
    '1KI',
    '1K',
    '1Gi2',
    '0x10',
    'NaN',
    'Infinity',
    '1,5',
    '1_000',
    '１',
  ];
  for (const q of notQuantities) {
    void test(`${JSON.stringify(q)} is not a quantity`, () =>
      rejects('memory', q, /is not a quantity \(use a non-negative number with an optional suffix/));
  }
  void test('bad numbers', () => {
    for (const n of [-1, -0.5, NaN, Infinity, -Infinity])
      rejects('cpu', n, /is not a quantity \(it must be a non-negative number\)/);
  });
  void test('too large', () => {
    for (const q of ['1e400', '1e61', '99999999999999999999', '9999999999Pi', '1e999999999'])
      rejects('memory', q, /too large/);
    rejects('memory', 1e300, /too large/);
    rejects('memory', 1e21, /too large/);
  });
  void test('the message names the field and quotes the input', () => {
    rejects('cpu', '8x', /^quota\.cpu: "8x" is not a quantity/, 'quota.cpu');
    rejects('cpu', '1e400', /^requests\.cpu: "1e400" is too large$/, 'requests.cpu');
    rejects('memory', 'x', /^memory: "x"/);
  });
});

void describe('formatAmount', () => {
  const cases: [string, number, string][] = [
    ['cpu', 0, '0'],
    ['cpu', 1000, '1'],
    ['cpu', 1500, '1500m'],
    ['cpu', 500, '500m'],
    ['cpu', 64_000, '64'],
    ['memory', 0, '0'],
    ['memory', 1, '1'],
    ['memory', 1000, '1000'],
    ['memory', 1023, '1023'],
    ['memory', 1024, '1Ki'],
    ['memory', 1536, '1536'],
    ['memory', 2 ** 34, '16Gi'],
    ['memory', 3 * 2 ** 20, '3Mi'],
    ['memory', 1025 * 2 ** 20, '1025Mi'],
    ['memory', 5 * 2 ** 50, '5Pi'],
    ['jobs', 10, '10'],
  ];
  for (const [resource, amount, expected] of cases) {
    void test(`${resource} ${amount} → ${expected}`, () =>
      assert.equal(formatAmount(resource, amount), expected));
  }

  void test('maps of amounts', () => {
    assert.deepEqual(parseAmounts({ cpu: '250m', memory: '1Gi' }, 'requests'), { cpu: 250, memory: 2 ** 30 });
    assert.deepEqual(formatAmounts({ cpu: 250, memory: 2 ** 30 }), { cpu: '250m', memory: '1Gi' });
    assert.throws(
      () => parseAmounts({ cpu: '1', memory: 'lots' }, 'requests'),
      /^BadRequestError: requests\.memory: "lots"/,
    );
  });
});

void describe('properties', () => {
  const resource = fc.constantFrom('cpu', 'memory', 'jobs', 'nvidia.com/gpu');
  const amount = fc.oneof(
    fc.integer({ min: 0, max: MAX }),
    fc.integer({ min: 0, max: 4096 }),
    fc.tuple(fc.integer({ min: 1, max: 8191 }), fc.integer({ min: 0, max: 40 })).map(([k, p]) => k * 2 ** p),
    fc.integer({ min: 0, max: 9_007_199_254 }).map((k) => k * 1000),
  );

  void test('format then parse returns the same amount', () => {
    fc.assert(
      fc.property(resource, amount, (r, a) => {
        const text = formatAmount(r, a);
        assert.equal(parseAmount(r, text), a, `${r} ${a} → ${text}`);
      }),
      { numRuns: 2000 },
    );
  });

  void test('parse then format then parse is stable', () => {
    const quantity = fc
      .tuple(
        fc.stringMatching(/^([0-9]{1,6}(\.[0-9]{0,4})?|\.[0-9]{1,4})$/),
        fc.constantFrom('', 'm', 'k', 'M', 'G', 'Ki', 'Mi', 'Gi', 'Ti', 'n', 'u', 'e3', 'e-2'),
      )
      .map(([m, s]) => m + s);
    fc.assert(
      fc.property(resource, quantity, (r, q) => {
        let a: number;
        try {
          a = parseAmount(r, q);
        } catch (e) {
          // Some draws (10000G of cpu in millicores) are beyond 2^53; the rejection tests cover those.
          fc.pre(!(e instanceof BadRequestError && /is too large$/.test(e.message)));
          throw e;
        }
        assert.ok(Number.isSafeInteger(a) && a >= 0);
        assert.equal(parseAmount(r, formatAmount(r, a)), a, `${r} ${q}`);
      }),
      { numRuns: 2000 },
    );
  });

  void test('a whole number with a binary suffix is that many powers of two', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 8191 }),
        fc.constantFrom<[string, number]>(['Ki', 10], ['Mi', 20], ['Gi', 30], ['Ti', 40]),
        (k, [suffix, power]) => assert.equal(parseAmount('memory', `${k}${suffix}`), k * 2 ** power),
      ),
    );
  });

  void test('a decimal is rounded up, never down', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 1, max: 999 }), (whole, frac) => {
        const text = `${whole}.${String(frac).padStart(3, '0')}`;
        assert.equal(parseAmount('memory', text), whole + 1);
        assert.equal(parseAmount('cpu', text), whole * 1000 + frac);
      }),
    );
  });

  void test('a whole number counts as itself, or as that many thousand millicores', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Math.floor(MAX / 1000) }), (n) => {
        assert.equal(parseAmount('memory', n), n);
        assert.equal(parseAmount('memory', String(n)), n);
        assert.equal(parseAmount('cpu', n), n * 1000);
        assert.equal(parseAmount('cpu', `${n}000m`), n * 1000);
      }),
    );
  });

  void test('any other string either parses to a safe integer or is a BadRequestError', () => {
    fc.assert(
      fc.property(resource, fc.string({ maxLength: 20 }), (r, s) => {
        try {
          const a = parseAmount(r, s);
          assert.ok(Number.isSafeInteger(a) && a >= 0);
        } catch (e) {
          assert.ok(e instanceof BadRequestError, String(e));
        }
      }),
      { numRuns: 2000 },
    );
  });
});
