/**
 * `berth exec`'s frames over its WebSocket (api/routes/exec.ts, cli/exec-stream.ts): the first
 * byte of each binary frame names its channel, as Kubernetes' exec protocol numbers them. Pure.
 */
export const EXEC_CHANNEL = {
  /** client → server: bytes for the command's stdin. */
  stdin: 0,
  /** server → client: its stdout (with a terminal: all its output). */
  stdout: 1,
  /** server → client: its stderr. */
  stderr: 2,
  /** server → client: JSON {exitCode, signal, message?}, how it ended; then a close (1000). */
  status: 3,
  /** client → server: JSON {cols, rows}, its terminal's new size. */
  resize: 4,
  /** client → server: followed by a channel (0), which is closed. */
  close: 255,
} as const;

/** The largest frame a server takes from a client (closed with 1009 past it). */
export const EXEC_MAX_FRAME = 1 << 20;

/** The widest and tallest terminal an exec takes, in characters. */
export const MAX_TERMINAL_SIDE = 1000;

/** How many exec and port-forward sessions may be open at once (config `sessions`). */
export interface SessionLimits {
  /** Per user (default 32). */
  maxPerUser: number;
  /** On one server (default 1024). */
  maxPerServer: number;
}
