/**
 * The channel a `berth agent` on another machine (a Slurm node, a pilot) dials to the server: one
 * WebSocket per agent (`GET /api/v1/agent/channel`), over which the server starts sessions inside
 * the agent's running job — `berth exec`, `attach`, `port-forward` — as the local factory does
 * over its agent host's IPC channel, with the same messages (host-protocol.ts). The agent dials
 * out, so a node behind a firewall that lets it reach the server is enough; it is authenticated by
 * the channel credential its registration gave it, never by the job's token (which the job's code
 * holds too).
 *
 * Frames: a session's bytes go in binary frames — a byte saying what they are (0 its input, 1 its
 * stdout, 2 its stderr), the session's number (4 bytes, big-endian), then the bytes as they came —
 * and everything else in a text frame of JSON. Pure: encodes and checks, sends nothing.
 */
import type { SessionCommand, SessionEvent } from './host-protocol.js';

/** What the server sends an agent over its channel. */
export type ToAgent = SessionCommand;
/** What an agent sends the server over its channel. */
export type ToServer = SessionEvent;

/** A frame as a WebSocket sends it: bytes (binary) or a string (text). */
export type Frame = Buffer | string;

const KIND = { input: 0, stdout: 1, stderr: 2 } as const;
const HEADER = 5;

function bytesFrame(kind: number, session: number, data: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(HEADER + data.byteLength);
  frame[0] = kind;
  frame.writeUInt32BE(session, 1);
  frame.set(data, HEADER);
  return frame;
}

/** The frame of `m`. */
export function encode(m: ToAgent | ToServer): Frame {
  if (m.type === 'exec-input' && m.data !== null) return bytesFrame(KIND.input, m.session, m.data);
  if (m.type === 'exec-output') return bytesFrame(KIND[m.stream], m.session, m.data);
  return JSON.stringify(m);
}

/** A binary frame's kind, session and bytes; undefined for one too short. */
function bytesOf(frame: Buffer): { kind: number; session: number; data: Buffer } | undefined {
  if (frame.length < HEADER) return undefined;
  return { kind: frame[0]!, session: frame.readUInt32BE(1), data: frame.subarray(HEADER) };
}

function json(frame: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(frame);
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const session = (v: unknown): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 2 ** 32;
const side = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 1000;
const size = (v: unknown): v is { cols: number; rows: number } =>
  typeof v === 'object' &&
  v !== null &&
  side((v as { cols?: unknown }).cols) &&
  side((v as { rows?: unknown }).rows);
const nullable = <T>(v: unknown, is: (v: unknown) => v is T): v is T | null => v === null || is(v);
const text = (v: unknown): v is string => typeof v === 'string';
const port = (v: unknown): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 65_535;

/**
 * What an agent was sent, checked field by field; undefined for a frame that is none of the
 * messages (the agent ignores it: an older agent meets a newer server's message so too).
 */
export function decodeToAgent(frame: Buffer, binary: boolean): ToAgent | undefined {
  if (binary) {
    const b = bytesOf(frame);
    return b?.kind === KIND.input ? { type: 'exec-input', session: b.session, data: b.data } : undefined;
  }
  const m = json(frame.toString('utf8'));
  if (!m || !session(m.session)) return undefined;
  const s = m.session;
  switch (m.type) {
    case 'exec': {
      const { jobId, workerId, rank, command, tty, forward, attach } = m;
      if (!session(jobId) || !session(workerId) || !session(rank)) return undefined;
      if (!Array.isArray(command) || !command.every(text)) return undefined;
      if (tty !== undefined && !size(tty)) return undefined;
      if (attach !== undefined && !size(attach)) return undefined;
      if (forward !== undefined && !port(forward)) return undefined;
      return {
        type: 'exec',
        session: s,
        jobId,
        workerId,
        rank,
        command,
        ...(tty ? { tty } : {}),
        ...(forward !== undefined ? { forward } : {}),
        ...(attach ? { attach } : {}),
      };
    }
    case 'exec-input':
      return m.data === null ? { type: 'exec-input', session: s, data: null } : undefined;
    case 'exec-kill':
      return { type: 'exec-kill', session: s };
    case 'exec-flow':
      return typeof m.paused === 'boolean' ? { type: 'exec-flow', session: s, paused: m.paused } : undefined;
    case 'exec-resize':
      return side(m.cols) && side(m.rows)
        ? { type: 'exec-resize', session: s, cols: m.cols, rows: m.rows }
        : undefined;
    default:
      return undefined;
  }
}

/**
 * What the server was sent by an agent, checked field by field: undefined for anything else (the
 * agent runs on a machine the server does not control; nothing it sends is taken unchecked).
 */
export function decodeToServer(frame: Buffer, binary: boolean): ToServer | undefined {
  if (binary) {
    const b = bytesOf(frame);
    if (b?.kind === KIND.stdout || b?.kind === KIND.stderr)
      return {
        type: 'exec-output',
        session: b.session,
        stream: b.kind === KIND.stdout ? 'stdout' : 'stderr',
        data: b.data,
      };
    return undefined;
  }
  const m = json(frame.toString('utf8'));
  if (!m || m.type !== 'exec-exit' || !session(m.session)) return undefined;
  const { exitCode, signal, message } = m;
  const code = (v: unknown): v is number =>
    typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 255;
  if (!nullable(exitCode, code) || !nullable(signal, text)) return undefined;
  if (message !== undefined && !text(message)) return undefined;
  return {
    type: 'exec-exit',
    session: m.session,
    exitCode,
    signal,
    ...(message !== undefined ? { message: message.slice(0, 4096) } : {}),
  };
}
