/**
 * Connections a request leaves unfinished, over a raw socket. A request refused before its body
 * is read is answered, and the rest of its body read and thrown away: a client that reads its
 * answer only once it has sent everything still gets it (not a reset), and a client that stalls
 * mid-body has its connection ended after a bound (else the socket is left to nobody). A stopping
 * server ends, after its grace, the connection of a request still in flight, and stops — a client
 * that stalls cannot keep it from closing its store.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { UNREAD_BODY_MS } from '../../src/api/unread-body.js';
import { startTestServer, useTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** A raw HTTP/1.1 connection to `url`: what it has received, and whether the server ended it. */
async function rawConnection(url: string) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  let received = '';
  let ended = false;
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('end', () => (ended = true));
  socket.on('error', () => {});
  return { socket, received: () => received, ended: () => ended };
}

/** The head of a POST whose body is `length` bytes, without its body. */
const postHead = (path: string, token: string, length: number, extra = '') =>
  `POST ${path} HTTP/1.1\r\nHost: berth\r\nAuthorization: Bearer ${token}\r\n` +
  `Content-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

describe('a request refused before its body is read', () => {
  const server = useTestServer();

  it('is answered, and a client that sends its whole body first reads that answer', async () => {
    const { hostname, port } = new URL(server().url);
    const socket = connect(Number(port), hostname);
    try {
      await once(socket, 'connect');
      // Nothing is read until all 8 MiB are sent: a server that closed on refusing would reset
      // the connection under the writes (EPIPE), and the answer would be lost with it.
      socket.pause();
      const size = 8 << 20;
      socket.write(postHead('/api/v1/projects', 'not-a-token', size));
      const chunk = Buffer.alloc(64 << 10, 0x20);
      for (let sent = 0; sent < size; sent += chunk.length)
        if (!socket.write(chunk)) await once(socket, 'drain');
      let received = '';
      socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
      socket.resume();
      await waitFor('the answer', () => /\r\n\r\n\{.*\}$/s.test(received), 30_000);
      assert.match(received, /^HTTP\/1\.1 401 /);
      // The body was read to its end, so the connection carries the next request.
      received = '';
      socket.write(
        `GET /api/v1/whoami HTTP/1.1\r\nHost: berth\r\nAuthorization: Bearer ${server().adminToken}\r\n\r\n`,
      );
      await waitFor('the next answer', () => /\r\n\r\n/.test(received), 30_000);
      assert.match(received, /^HTTP\/1\.1 200 /);
    } finally {
      socket.destroy();
    }
  });

  it('from a client that stalls mid-body, is answered, and the server ends the connection', async () => {
    const c = await rawConnection(server().url);
    try {
      // A bad token is refused as the request's head arrives: 100,000 bytes declared, 9 sent.
      c.socket.write(postHead('/api/v1/projects', 'not-a-token', 100_000) + '{"name":');
      await waitFor('the answer', () => /\r\n\r\n/.test(c.received()), 30_000);
      assert.match(c.received(), /^HTTP\/1\.1 401 /);
      await waitFor('the server to end the connection', c.ended, UNREAD_BODY_MS + 30_000);
    } finally {
      c.socket.destroy();
    }
  });
});

describe('a stopping server', () => {
  it('ends the connection of a request still in flight after its grace, and stops', async () => {
    const s = await startTestServer({ requestsGraceMs: 200 });
    const c = await rawConnection(s.url);
    let deadline: NodeJS.Timeout | undefined;
    try {
      // Expect: 100-continue — the server's "100 Continue" says it has the request's head: the
      // request is in flight (its body awaited), not an idle connection a stop ends at once.
      c.socket.write(postHead('/api/v1/projects', s.adminToken, 1_000, 'Expect: 100-continue\r\n'));
      await waitFor('100 Continue', () => /^HTTP\/1\.1 100 /.test(c.received()), 30_000);
      const stopped = await Promise.race([
        s.close().then(() => true),
        new Promise<false>((resolve) => (deadline = setTimeout(() => resolve(false), 30_000))),
      ]);
      assert.equal(stopped, true, 'the server had not stopped 30 s after it was asked to');
      await waitFor('the connection to be ended', () => c.ended() || c.socket.destroyed, 30_000);
    } finally {
      clearTimeout(deadline);
      c.socket.destroy();
    }
  });
});
