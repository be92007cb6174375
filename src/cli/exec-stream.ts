/**
 * The client side of `berth exec` and `berth attach` (api/routes/exec.ts): one WebSocket (ws) to the server, the
 * command's output written here as it comes, this terminal's input sent when asked for (`-i`), and
 * the command's exit status returned — what `berth exec` exits with, as `kubectl exec` and
 * `docker exec` do.
 */
import type { IncomingMessage } from 'node:http';
import { WebSocket } from 'ws';
import { trustingAgent } from '../agent/trust.js';
import { API_PREFIX, ApiError, ConnectionError } from './client.js';
import type { Connection } from './connection.js';
import { CliError } from './errors.js';
import { EXEC_CHANNEL } from '../domain/exec-protocol.js';

const {
  stdin: STDIN,
  stdout: STDOUT,
  stderr: STDERR,
  status: STATUS,
  resize: RESIZE,
  close: CLOSE,
} = EXEC_CHANNEL;

export interface ExecIo {
  /** Sent to the command when given (`-i`); else its stdin is closed at once. */
  stdin?: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /**
   * A terminal for the command (`-t`), this size; `resized` is told of each new size. With a
   * terminal here as stdin, it is put in raw mode while the command runs (keys, ^C among them,
   * go to the command) and restored after.
   */
  tty?: { cols: number; rows: number; resized?: (listener: (cols: number, rows: number) => void) => void };
  /**
   * The end of `stdin` is typed as ^D rather than said as its close: an interactive job's
   * terminal takes no close (`berth attach` without input must not end its shell).
   */
  endAsEof?: boolean;
}

/** `out`'s size when it is a terminal (else 80 × 24), and its changes: a session's `tty`. */
export function localTerminal(out: NodeJS.WriteStream): NonNullable<ExecIo['tty']> {
  return {
    cols: out.isTTY ? out.columns : 80,
    rows: out.isTTY ? out.rows : 24,
    resized: (fn) => void out.on('resize', () => fn(out.columns, out.rows)),
  };
}

interface ExecStatus {
  exitCode: number | null;
  signal: string | null;
  message?: string;
}

/** The API path of job `jobId`'s exec of `command` on member `rank`: /jobs/ID/exec?command=…. */
export function execPath(
  jobId: number,
  command: string[],
  rank: number,
  tty?: { cols: number; rows: number },
): string {
  const query = [
    ...command.map((c) => `command=${encodeURIComponent(c)}`),
    `rank=${rank}`,
    ...(tty ? ['tty=true', `cols=${tty.cols}`, `rows=${tty.rows}`] : []),
  ].join('&');
  return `/jobs/${jobId}/exec?${query}`;
}

/** The WebSocket URL of `path` of the API at `base` (an http(s) URL). */
export const socketUrl = (base: string, path: string): string =>
  `${base.replace(/^http/, 'ws').replace(/\/+$/, '')}${API_PREFIX}${path}`;

/** The API path that attaches to interactive job `jobId`'s terminal at `size` (`berth attach`). */
export const attachPath = (jobId: number, size: { cols: number; rows: number }): string =>
  `/jobs/${jobId}/attach?cols=${size.cols}&rows=${size.rows}`;

/** Runs `command` in job `jobId`; resolves with its exit status (1 when it never ran, saying why). */
export function runExec(
  conn: Connection,
  jobId: number,
  command: string[],
  rank: number,
  io: ExecIo,
): Promise<number> {
  return runSession(conn, execPath(jobId, command, rank, io.tty), io);
}

/**
 * Carries the session at `path` (an exec, or an attach to a job's terminal) between this process's
 * streams and the server; resolves with the exit status it ends with (1 without one, saying why).
 */
export function runSession(conn: Connection, path: string, io: ExecIo): Promise<number> {
  const ws = apiSocket(conn, path);
  return new Promise<number>((resolve, reject) => {
    let status: ExecStatus | undefined;
    // Refused before the upgrade: the server's ordinary error answer.
    ws.on('unexpected-response', (_req, res) => void refusal(res).then(reject));
    ws.on('error', (err) => reject(new ConnectionError(`cannot reach ${conn.url}: ${err.message}`)));
    const raw = io.tty && io.stdin && isTty(io.stdin) ? io.stdin : undefined;
    ws.on('open', () => {
      io.tty?.resized?.((cols, rows) => {
        if (ws.readyState === ws.OPEN)
          ws.send(Buffer.concat([Buffer.of(RESIZE), Buffer.from(JSON.stringify({ cols, rows }))]));
      });
      raw?.setRawMode(true);
      if (!io.stdin) return ws.send(Buffer.of(CLOSE, STDIN));
      io.stdin.on('data', (d: Buffer | string) => ws.send(Buffer.concat([Buffer.of(STDIN), Buffer.from(d)])));
      io.stdin.on('end', () => {
        if (ws.readyState === ws.OPEN) ws.send(io.endAsEof ? Buffer.of(STDIN, 4) : Buffer.of(CLOSE, STDIN));
      });
    });
    ws.on('message', (data: Buffer) => {
      const channel = data[0];
      const body = data.subarray(1);
      if (channel === STDOUT) io.stdout.write(body);
      else if (channel === STDERR) io.stderr.write(body);
      else if (channel === STATUS) status = JSON.parse(body.toString('utf8')) as ExecStatus;
    });
    ws.on('close', (code, reason) => {
      raw?.setRawMode(false);
      io.stdin?.pause();
      if (!status)
        return reject(
          new CliError(
            `the session ended before the command did: ${reason.toString() || `WebSocket close ${code}`}`,
          ),
        );
      // After a terminal's output, on a line of its own.
      if (status.message) io.stderr.write(`${io.tty ? '\r\n' : ''}berth: ${status.message}\n`);
      resolve(status.exitCode ?? 1);
    });
  });
}

function isTty(s: NodeJS.ReadableStream): s is NodeJS.ReadStream & { setRawMode(mode: boolean): void } {
  return (s as NodeJS.ReadStream).isTTY === true && typeof (s as NodeJS.ReadStream).setRawMode === 'function';
}

/** An answer that refused a WebSocket's upgrade, as the ApiError its body says. */
export function refusal(res: IncomingMessage): Promise<ApiError> {
  return new Promise((resolve) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += chunk));
    res.on('end', () => {
      let message = text.trim() || `HTTP ${res.statusCode}`;
      let code = 'error';
      try {
        const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
        message = body.error?.message ?? message;
        code = body.error?.code ?? code;
      } catch {
        // not a berth answer: said as it came
      }
      resolve(new ApiError(res.statusCode ?? 0, code, message));
    });
  });
}

/** A WebSocket to `path` of the API, as the connection's holder (its token, its CA). */
export function apiSocket(conn: Connection, path: string): WebSocket {
  return new WebSocket(socketUrl(conn.url, path), {
    headers: { authorization: `Bearer ${conn.token}` },
    ...(conn.ca ? { agent: trustingAgent(conn.ca.certificates) } : {}),
  });
}
