/**
 * The agent's upload of a job's output (agent/log-uploader.ts): bytes sent as written, in order,
 * in pieces of at most 256 KiB; and a bounded backlog — past 8 MiB not yet uploaded, `write`
 * says to stop reading the job's output until `drained`, so that a server holding uploads back
 * (a job's rate limit) blocks the job on its pipe rather than growing the agent's memory.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AgentClient } from '../../src/agent/client.js';
import { BACKLOG, LogUploader } from '../../src/agent/log-uploader.js';

/** A client whose uploads wait until `release()`; it keeps what it was sent. */
function heldClient() {
  const sent: Buffer[] = [];
  let open: () => void = () => {};
  let gate = new Promise<void>((r) => (open = r));
  const client = {
    post: async (path: string, body: Buffer, type: string) => {
      assert.equal(path, '/logs');
      assert.equal(type, 'application/octet-stream');
      await gate;
      sent.push(Buffer.from(body));
      return undefined;
    },
  } as unknown as AgentClient;
  return {
    client,
    sent,
    release: () => {
      open();
      gate = Promise.resolve();
    },
  };
}

describe("the agent's upload of output", () => {
  it('sends the bytes as written, in order, in pieces of at most 256 KiB', async () => {
    const c = heldClient();
    c.release();
    const up = new LogUploader(c.client);
    const data = Buffer.from(Array.from({ length: 600 * 1024 }, (_, i) => (i * 7) % 256));
    for (let at = 0; at < data.length; at += 4096) up.write(data.subarray(at, at + 4096));
    up.write('\xff'); // a string goes as its UTF-8
    await up.flush();
    assert.ok(c.sent.every((b) => b.length <= 256 * 1024));
    assert.deepEqual(Buffer.concat(c.sent), Buffer.concat([data, Buffer.from('\xff', 'utf8')]));
  });

  it('asks the writer to wait past its backlog, until the uploads catch up', async () => {
    const c = heldClient();
    const up = new LogUploader(c.client);
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    let accepted = 0;
    while (up.write(chunk)) accepted++;
    assert.equal(accepted + 1, BACKLOG / chunk.length, 'false once the backlog reaches its bound');
    let drained = false;
    const waiting = up.drained().then(() => (drained = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(drained, false, 'nothing uploaded yet: the writer waits');
    c.release();
    await waiting;
    await up.flush();
    assert.equal(Buffer.concat(c.sent).length, BACKLOG, 'every byte written was sent');
  });
});
