/**
 * sessions: `berth exec` (docs/SECURITY.md, "Exec"), each figure against a baseline measured in
 * the same run, on a running job of the local factory.
 *
 * - A keystroke's round trip: one byte to `cat` inside the job and back, through the server (a
 *   WebSocket, the agent host's channel, nsenter's pipes), against the same byte through a bare
 *   pipe to a `cat` of this process's own (p50, p99); and one typed on an interactive job's
 *   terminal (`berth attach`) until its echo comes back, what a person feels at each key.
 * - Throughput: 100 MB of `head -c` inside the job read through a session, against the same
 *   command's output through a bare TCP relay on the loopback (a Node server piping it to a
 *   socket).
 * - Idle sessions: 200 sessions open at once (each a `cat` waiting for input): the server's and
 *   its agent host's memory per session.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, readdirSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import type { WebSocket } from 'ws';
import type { Connection } from '../src/cli/connection.js';
import { apiSocket, attachPath, execPath } from '../src/cli/exec-stream.js';
import { quantile } from './flood.js';
import { fmt, get, post, startBenchServer } from './lib.js';

export interface SessionsBenchResult {
  roundTripMs: { berth: number[]; pipe: number[]; attach: number[] };
  throughput: { megabytes: number; berthS: number; relayS: number };
  idle: { sessions: number; serverKiB: number; hostKiB: number };
}

const MB = 1_000_000;

/** A session of `command` in job `jobId`, open. */
async function session(conn: Connection, jobId: number, command: string[]): Promise<WebSocket> {
  const ws = apiSocket(conn, execPath(jobId, command, 0));
  await once(ws, 'open');
  return ws;
}

/** VmRSS of a process, in KiB. */
function rssKiB(pid: number): number {
  return Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
}

/** The agent host among `server`'s children. */
function hostOf(server: number): number {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === server && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('host-main'))
        return Number(pid);
    } catch {
      // gone
    }
  }
  throw new Error(`no agent host under ${server}`);
}

/** One byte out and back, `n` times, through `send` and whatever `received` hears. */
async function roundTrips(
  n: number,
  send: () => void,
  received: (fn: () => void) => void,
): Promise<number[]> {
  const out: number[] = [];
  let waiting: (() => void) | undefined;
  received(() => waiting?.());
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const back = new Promise<void>((resolve) => (waiting = resolve));
    send();
    await back;
    out.push(performance.now() - t0);
  }
  return out;
}

export async function runSessionsBench(
  trips = 300,
  megabytes = 100,
  idle = 200,
): Promise<SessionsBenchResult> {
  // Above the default 32 a user may hold: the idle figure opens 200 at once.
  const s = await startBenchServer(`sessions: { maxPerUser: ${idle + 10} }`);
  try {
    await post(s.api, s.token, '/cluster-queues', { name: 'bench', quota: { jobs: 1000 } });
    await post(s.api, s.token, '/projects', { name: 'bench', clusterQueue: 'bench' });
    const job = (await post(s.api, s.token, '/projects/bench/jobs', { command: ['sleep', '3600'] })) as {
      id: number;
    };
    const shell = (await post(s.api, s.token, '/projects/bench/jobs', {
      command: ['cat'],
      interactive: true,
      timeoutSeconds: 3600,
    })) as { id: number };
    for (const id of [job.id, shell.id])
      for (;;) {
        const j = await get<{ state: string; reason: string }>(s.api, s.token, `/jobs/${id}`);
        if (j.state === 'running') break;
        if (j.state === 'failed' || j.state === 'cancelled') throw new Error(j.reason);
        await new Promise((r) => setTimeout(r, 20));
      }
    const conn = { url: s.api.replace(/\/api\/v1$/, ''), token: s.token } as Connection;

    // A keystroke: through the server, and through a bare pipe.
    const ws = await session(conn, job.id, ['cat']);
    const berthTrips = await roundTrips(
      trips,
      () => ws.send(Buffer.of(0, 120)),
      (fn) => ws.on('message', (d: Buffer) => d[0] === 1 && fn()),
    );
    ws.close();
    const term = apiSocket(conn, attachPath(shell.id, { cols: 80, rows: 24 }));
    await once(term, 'open');
    const attachTrips = await roundTrips(
      trips,
      () => term.send(Buffer.of(0, 120)),
      (fn) => term.on('message', (d: Buffer) => d[0] === 1 && fn()),
    );
    term.close();
    const cat = spawn('cat', [], { stdio: ['pipe', 'pipe', 'ignore'] });
    const pipeTrips = await roundTrips(
      trips,
      () => cat.stdin.write('x'),
      (fn) => cat.stdout.on('data', () => fn()),
    );
    cat.kill();

    // 100 MB: through a session, and through a bare TCP relay.
    const bytes = megabytes * MB;
    const t0 = performance.now();
    const big = await session(conn, job.id, ['head', '-c', String(bytes), '/dev/zero']);
    let got = 0;
    big.on('message', (d: Buffer) => {
      if (d[0] === 1) got += d.length - 1;
    });
    await once(big, 'close');
    const berthS = (performance.now() - t0) / 1000;
    if (got !== bytes) throw new Error(`the session carried ${got} bytes of ${bytes}`);
    const relay = createServer((sock) => {
      const head = spawn('head', ['-c', String(bytes), '/dev/zero'], { stdio: ['ignore', 'pipe', 'ignore'] });
      head.stdout.pipe(sock);
    });
    relay.listen(0, '127.0.0.1');
    await once(relay, 'listening');
    const t1 = performance.now();
    const client = createConnection((relay.address() as AddressInfo).port, '127.0.0.1');
    let relayed = 0;
    client.on('data', (d: Buffer) => (relayed += d.length));
    await once(client, 'end');
    const relayS = (performance.now() - t1) / 1000;
    relay.close();
    if (relayed !== bytes) throw new Error(`the relay carried ${relayed} bytes of ${bytes}`);

    // Idle sessions: memory of the server and its agent host, before and with them.
    const host = hostOf(s.pid);
    const before = { server: rssKiB(s.pid), host: rssKiB(host) };
    const open: WebSocket[] = [];
    for (let i = 0; i < idle; i++) open.push(await session(conn, job.id, ['cat']));
    // Each answers an echo: all are there, their commands running.
    await Promise.all(
      open.map(async (w) => {
        const echoed = new Promise<void>((resolve) => w.once('message', () => resolve()));
        w.send(Buffer.of(0, 120));
        await echoed;
      }),
    );
    const withThem = { server: rssKiB(s.pid), host: rssKiB(host) };
    for (const w of open) w.close();
    return {
      roundTripMs: { berth: berthTrips, pipe: pipeTrips, attach: attachTrips },
      throughput: { megabytes, berthS, relayS },
      idle: {
        sessions: idle,
        serverKiB: (withThem.server - before.server) / idle,
        hostKiB: (withThem.host - before.host) / idle,
      },
    };
  } finally {
    await s.stop();
  }
}

export function printSessionsBench(r: SessionsBenchResult): void {
  const q = (xs: number[], p: number) => quantile(xs, p);
  const { berth, pipe, attach } = r.roundTripMs;
  console.log(
    `  a keystroke's round trip (${berth.length} bytes, one at a time): berth exec p50 ${fmt(q(berth, 0.5), 2)} ms, p99 ${fmt(q(berth, 0.99), 2)} ms; a bare pipe p50 ${fmt(q(pipe, 0.5), 3)} ms, p99 ${fmt(q(pipe, 0.99), 3)} ms`,
  );
  console.log(
    `  a key typed on an interactive job's terminal (berth attach) until its echo: p50 ${fmt(q(attach, 0.5), 2)} ms, p99 ${fmt(q(attach, 0.99), 2)} ms (${fmt(q(attach, 0.5) / q(pipe, 0.5), 0)}× the bare pipe's p50)`,
  );
  const t = r.throughput;
  console.log(
    `  ${t.megabytes} MB of output: through berth exec ${fmt(t.berthS, 2)} s (${fmt(t.megabytes / t.berthS, 0)} MB/s); a bare TCP relay ${fmt(t.relayS, 2)} s (${fmt(t.megabytes / t.relayS, 0)} MB/s): ratio ${fmt(t.berthS / t.relayS, 2)}`,
  );
  console.log(
    `  ${r.idle.sessions} idle sessions: ${fmt(r.idle.serverKiB, 1)} KiB of the server's memory and ${fmt(r.idle.hostKiB, 1)} KiB of its agent host's per session`,
  );
}
