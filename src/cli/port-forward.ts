/**
 * The client side of `berth port-forward` (api/routes/exec.ts's port-forward): a local listener
 * whose every connection is carried to the job's port over a WebSocket of its own, as `kubectl
 * port-forward` carries each over its stream; many at once.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Connection } from './connection.js';
import { apiSocket, refusal } from './exec-stream.js';

export interface ForwardOptions {
  jobId: number;
  /** The port inside the job. */
  remote: number;
  rank: number;
  /** Where to listen here (0: a free port). */
  host: string;
  local: number;
  /** One line per failed connection (a refusal, nothing listening in the job). */
  log: (line: string) => void;
}

/** Listens; resolves with the listener once it listens (its address says the port). */
export function startForward(conn: Connection, o: ForwardOptions): Promise<Server> {
  const server = createServer((sock) => carry(conn, o, sock));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.local, o.host, () => resolve(server));
  });
}

function carry(conn: Connection, o: ForwardOptions, sock: Socket): void {
  // Nothing is read until the job's side is there.
  sock.pause();
  const ws = apiSocket(conn, `/jobs/${o.jobId}/port-forward?port=${o.remote}&rank=${o.rank}`);
  const fail = (why: string) => {
    o.log(`a connection to port ${o.remote} of job ${o.jobId}: ${why}`);
    sock.destroy();
  };
  ws.on('unexpected-response', (_req, res) => void refusal(res).then((e) => fail(e.message)));
  ws.on('error', (err) => fail(err.message));
  ws.on('open', () => {
    sock.on('data', (d: Buffer) => ws.send(d));
    sock.on('end', () => ws.close(1000));
    sock.resume();
  });
  ws.on('message', (d: Buffer) => sock.write(d));
  ws.on('close', (code: number, reason: Buffer) => {
    if (code === 1000 || code === 1005) sock.end();
    else fail(reason.toString() || `closed (${code})`);
  });
  sock.on('error', () => ws.terminate());
  sock.on('close', () => {
    if (ws.readyState === ws.OPEN) ws.close(1000);
  });
}
