/** `logs` in berth.yaml: the most output one run of a job keeps, and the key a mistake names. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { failureAs, resolveAs } from './support.js';

const FILE = '/etc/berth/berth.yaml';
const resolve = resolveAs(FILE);
const failure = failureAs(FILE);

describe('configuration: logs', () => {
  it('keeps 100 MiB of output per run by default', () => {
    assert.deepEqual(resolve({}).logs, { maxBytesPerJob: 100 * 2 ** 20 });
  });

  it('reads a size as a quantity or bytes', () => {
    assert.equal(resolve({ logs: { maxBytesPerJob: '4Ki' } }).logs.maxBytesPerJob, 4096);
    assert.equal(resolve({ logs: { maxBytesPerJob: '1G' } }).logs.maxBytesPerJob, 1e9);
    assert.equal(resolve({ logs: { maxBytesPerJob: 0 } }).logs.maxBytesPerJob, 0);
  });

  it('names the key of each mistake', () => {
    assert.match(
      failure({ logs: { maxBytesPerJob: 'lots' } }),
      /^\/etc\/berth\/berth\.yaml: logs\.maxBytesPerJob: "lots" is not a size in bytes \(100Mi, 1G, or a number\)$/,
    );
    assert.throws(() => validateConfig({ logs: { maxBytesPerJob: -1 } }, FILE), /logs\.maxBytesPerJob/);
    assert.throws(() => validateConfig({ logs: { keep: true } }, FILE), /logs\.keep: unknown key/);
  });
});
