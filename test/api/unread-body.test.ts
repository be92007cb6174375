/**
 * The rest of a refused request's body, read and thrown away within bounds (src/api/unread-body.ts),
 * on streams made here: what ends it, and that a request with no socket (Fastify's inject) is
 * ended too — a socket's destroy() called on it threw, long after its test had passed.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { discardUnreadBody, type RequestBody } from '../../src/api/unread-body.js';

/** A request body still arriving, with no socket behind it. */
function arriving(): PassThrough & RequestBody {
  return Object.assign(new PassThrough(), { complete: false });
}

describe('the rest of a refused body', () => {
  it('is read to its end, and the request is left whole', async () => {
    const req = arriving();
    discardUnreadBody(req, { ms: 60_000, bytes: 1024 });
    req.write(Buffer.alloc(1000));
    req.end();
    await once(req, 'end');
    assert.equal(req.destroyed && !req.readableEnded, false);
  });

  it('ends the request of a client that sends past the bound', async () => {
    const req = arriving();
    discardUnreadBody(req, { ms: 60_000, bytes: 1024 });
    req.write(Buffer.alloc(1000));
    req.write(Buffer.alloc(1000));
    await once(req, 'close');
    assert.equal(req.destroyed, true);
    assert.equal(req.readableEnded, false);
  });

  it('ends the request of a client that stalls, without a socket to end', async () => {
    const req = arriving();
    discardUnreadBody(req, { ms: 50, bytes: 1024 });
    req.write('{"name":');
    // Its timer does not hold the process open (a server's does not wait on it): this does.
    const alive = setInterval(() => {}, 1000);
    try {
      await once(req, 'close');
    } finally {
      clearInterval(alive);
    }
    assert.equal(req.destroyed, true);
  });

  it('leaves a request already read alone', () => {
    const req = Object.assign(new PassThrough(), { complete: true });
    discardUnreadBody(req, { ms: 50, bytes: 1024 });
    assert.equal(req.listenerCount('data'), 0);
  });
});
