/**
 * Runs an admin-provided program the way execFile does (no shell, no arguments), but in its own
 * process group: a shell script killed on timeout would otherwise leave its children holding
 * stdout open, and the timeout would not end the wait.
 */
import { spawn } from 'node:child_process';

export interface RunOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** Output beyond this is a failure (metadata is small). */
  maxStdoutBytes?: number;
}

/** Why a program failed; `stderr` is the last line it wrote there (trimmed, bounded). */
export class ProgramError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
    /** The program could not be started at all (missing, not executable). */
    readonly notStarted = false,
  ) {
    super(message);
    this.name = 'ProgramError';
  }
}

const STDERR_KEEP = 8192;
const LINE_MAX = 300;

/** The last non-empty line of `text`, trimmed and cut to LINE_MAX characters. */
export function lastLine(text: string): string {
  const line = text.trimEnd().split('\n').pop()?.trim() ?? '';
  return line.length > LINE_MAX ? `${line.slice(0, LINE_MAX)}…` : line;
}

/** Resolves with the program's stdout when it exits 0. */
export function runProgram(file: string, opts: RunOptions): Promise<string> {
  const maxStdout = opts.maxStdoutBytes ?? 1 << 20;
  return new Promise((resolve, reject) => {
    const child = spawn(file, [], {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let errTail = '';
    let settled = false;

    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const fail = (message: string, notStarted = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Do not wait for 'close': a killed group's orphans may still hold the pipes.
      child.stdout.destroy();
      child.stderr.destroy();
      reject(new ProgramError(message, lastLine(errTail), notStarted));
    };

    const timer = setTimeout(() => {
      killGroup();
      fail(`timed out after ${opts.timeoutMs / 1000} s`);
    }, opts.timeoutMs);

    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxStdout) {
        killGroup();
        fail(`printed more than ${maxStdout} bytes on stdout`);
      } else out.push(chunk);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      errTail = (errTail + chunk).slice(-STDERR_KEEP);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      killGroup();
      fail(`cannot be started (${err.code ?? err.message})`, child.pid === undefined);
    });
    child.on('close', (code, signal) => {
      if (settled) return;
      if (code === 0) {
        settled = true;
        clearTimeout(timer);
        resolve(Buffer.concat(out).toString('utf8'));
      } else fail(signal ? `was killed by ${signal}` : `exited with code ${code}`);
    });
  });
}
