/** The semaphore and token wells (the token minter is faked: the real one belongs to the server). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SemaphoreWell } from '../../src/wells/semaphore.js';
import { TokenWell, type TokenMinter } from '../../src/wells/token.js';
import { WellError, type InstanceRequest } from '../../src/wells/well.js';

const req: InstanceRequest = { instanceId: 5, jobId: 11, project: 'team-a', type: 'api-token' };

void describe('semaphore well', () => {
  void test('create gives empty metadata; destroy, with or without it, does nothing', async () => {
    const w = new SemaphoreWell('licence', 2);
    assert.deepEqual([w.type, w.kind, w.capacity], ['licence', 'semaphore', 2]);
    assert.deepEqual(await w.create(req), {});
    await w.destroy(req, {});
    await w.destroy(req, null);
    await w.close();
  });
});

/** Records every call; `fail` makes the next call throw it. */
class FakeMinter implements TokenMinter {
  calls: Array<[string, InstanceRequest]> = [];
  fail: Error | undefined;
  private n = 0;

  async mint(r: InstanceRequest) {
    this.calls.push(['mint', r]);
    this.throwIfAsked();
    return { token: `tok-${++this.n}`, url: 'http://127.0.0.1:7070' };
  }

  async revoke(r: InstanceRequest) {
    this.calls.push(['revoke', r]);
    this.throwIfAsked();
  }

  private throwIfAsked() {
    const f = this.fail;
    this.fail = undefined;
    if (f !== undefined) throw f;
  }
}

void describe('token well', () => {
  void test('create mints for the request and returns token, url and project', async () => {
    const minter = new FakeMinter();
    const w = new TokenWell('api-token', 3, minter);
    assert.deepEqual([w.type, w.kind, w.capacity], ['api-token', 'token', 3]);
    assert.deepEqual(await w.create(req), {
      token: 'tok-1',
      url: 'http://127.0.0.1:7070',
      project: 'team-a',
    });
    assert.deepEqual(minter.calls, [['mint', req]]);
  });

  void test('destroy revokes by request, also with null metadata', async () => {
    const minter = new FakeMinter();
    const w = new TokenWell('api-token', 3, minter);
    const md = await w.create(req);
    await w.destroy(req, md);
    await w.destroy({ ...req, instanceId: 6 }, null);
    assert.deepEqual(minter.calls, [
      ['mint', req],
      ['revoke', req],
      ['revoke', { ...req, instanceId: 6 }],
    ]);
  });

  void test("a minter's failure becomes a retryable WellError; a WellError passes through", async () => {
    const minter = new FakeMinter();
    const w = new TokenWell('api-token', 3, minter);
    minter.fail = new Error('store is closed');
    await assert.rejects(
      w.create(req),
      (e) =>
        e instanceof WellError &&
        e.retryable &&
        e.message === 'token well "api-token": cannot mint a token: store is closed',
    );
    minter.fail = new Error('database is locked');
    await assert.rejects(
      w.destroy(req, null),
      (e) =>
        e instanceof WellError &&
        e.message === 'token well "api-token": cannot revoke the token: database is locked',
    );
    const own = new WellError('project team-a is inactive', false);
    minter.fail = own;
    await assert.rejects(w.create(req), (e) => e === own);
  });
});
