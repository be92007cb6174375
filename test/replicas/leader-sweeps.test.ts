/**
 * The leader's sweeps (retention, artifacts): at start and then every period on the leading
 * replica only; a follower never sweeps, and sweeps within a minute of becoming the leader. On a
 * mocked clock: no store, no waiting.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { ClusterView, ServiceContext } from '../../src/service/context.js';
import { scheduleLeaderSweeps } from '../../src/service/upkeep/leader-sweeps.js';

const HOUR = 3_600_000;

describe('the leader sweeps', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] }));
  afterEach(() => mock.timers.reset());

  /** A context whose replica leads while `leading()` says so (no cluster: alone, on SQLite). */
  const contextOf = (leading?: () => boolean): ServiceContext =>
    ({
      cluster: leading && ({ role: () => (leading() ? 'leader' : 'follower') } as ClusterView),
    }) as ServiceContext;

  /** Lets the sweep's promise settle (it resolves at once). */
  const settle = () => Promise.resolve().then(() => Promise.resolve());

  it('sweeps at start and then every period when alone', async () => {
    let sweeps = 0;
    const stop = scheduleLeaderSweeps(
      contextOf(),
      async () => void sweeps++,
      () => {},
      HOUR,
    );
    mock.timers.tick(0);
    await settle();
    assert.equal(sweeps, 1, 'at start');
    mock.timers.tick(HOUR - 60_000);
    await settle();
    assert.equal(sweeps, 1, 'not before the period');
    mock.timers.tick(60_000);
    await settle();
    assert.equal(sweeps, 2, 'after the period');
    await stop();
  });

  it('never sweeps on a follower, and sweeps within a minute of becoming the leader', async () => {
    let leads = false;
    let sweeps = 0;
    const stop = scheduleLeaderSweeps(
      contextOf(() => leads),
      async () => void sweeps++,
      () => {},
      HOUR,
    );
    mock.timers.tick(0);
    mock.timers.tick(5 * 60_000);
    await settle();
    assert.equal(sweeps, 0, 'a follower does not sweep');
    leads = true;
    mock.timers.tick(60_000);
    await settle();
    assert.equal(sweeps, 1, 'the new leader sweeps');
    await stop();
    mock.timers.tick(2 * HOUR);
    await settle();
    assert.equal(sweeps, 1, 'stopped');
  });
});
