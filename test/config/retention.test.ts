/** `retention` in berth.yaml: its defaults, `forever`, years, and the key each mistake names. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { failureAs, resolveAs } from './support.js';

const FILE = '/etc/berth/berth.yaml';
const resolve = resolveAs(FILE);
const failure = failureAs(FILE);
const DAY = 86_400;

describe('configuration: retention', () => {
  it('keeps ended jobs and the ledger 90 days and the audit log a year by default', () => {
    assert.deepEqual(resolve({}).retention, { jobs: 90 * DAY, audit: 365 * DAY, ledger: 90 * DAY });
  });

  it('reads durations, years, seconds and forever', () => {
    assert.deepEqual(resolve({ retention: { jobs: '30d', audit: '2y', ledger: 'forever' } }).retention, {
      jobs: 30 * DAY,
      audit: 730 * DAY,
      ledger: null,
    });
    assert.deepEqual(resolve({ retention: { jobs: 'forever', audit: 'forever', ledger: 3600 } }).retention, {
      jobs: null,
      audit: null,
      ledger: 3600,
    });
  });

  it('names the key of each mistake', () => {
    assert.match(
      failure({ retention: { jobs: 'soon' } }),
      /^\/etc\/berth\/berth\.yaml: retention\.jobs: "soon" is not a retention \(90d, 1y, 12h, seconds, or forever\)$/,
    );
    assert.match(
      failure({ retention: { audit: '0y' } }),
      /retention\.audit: "0y" must be at least 1s, or forever/,
    );
    assert.match(failure({ retention: { ledger: '0d' } }), /retention\.ledger: /);
    assert.throws(() => validateConfig({ retention: { ledger: 0 } }, FILE), /retention\.ledger/);
    assert.throws(
      () => validateConfig({ retention: { events: '1d' } }, FILE),
      /retention\.events: unknown key/,
    );
  });
});
