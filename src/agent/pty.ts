/**
 * A pseudo-terminal this process holds the master of, for a child's stdin, stdout and stderr:
 * an interactive job's terminal (job-terminal.ts), `berth exec -t`'s (exec-process.ts).
 *
 * Opened with node-pty's native `open` (openpty(3)) rather than its spawn (forkpty), which
 * starts the child itself: a child here is started by child_process with the descriptors it
 * needs besides (bubblewrap's info, the look-up's answer) and with every other descriptor this
 * process holds sealed off (sealed-stdio.ts) — the master of another job's terminal among them,
 * for openpty(3) leaves it open across exec.
 */
import { closeSync, constants as fsConstants, openSync, write } from 'node:fs';
import { createRequire } from 'node:module';
import { ReadStream } from 'node:tty';

interface PtyBinding {
  open(cols: number, rows: number): { master: number; slave: number; pty: string };
  resize(fd: number, cols: number, rows: number): void;
}

let binding: PtyBinding | undefined;

/** node-pty's native module, found as node-pty itself finds it (its lib/utils). */
function native(): PtyBinding {
  if (binding) return binding;
  const require = createRequire(import.meta.url);
  const utils = require('node-pty/lib/utils.js') as {
    loadNativeModule(name: string): { module: PtyBinding };
  };
  return (binding = utils.loadNativeModule('pty').module);
}

export class Pty {
  /** The slave, for the child's stdio; closed here once the child has it (`handedOver`). */
  slave: number | undefined;
  private readonly master: number;
  private readonly reader: ReadStream;
  private open = true;
  private closed = false;
  private readonly closedFns: (() => void)[] = [];
  private writing: Promise<void> = Promise.resolve();

  constructor(size: { cols: number; rows: number }, onData: (data: Buffer) => void) {
    const { master, slave, pty: name } = native().open(size.cols, size.rows);
    this.master = master;
    // openpty's slave is non-blocking for node-pty's own reads; the child's must block, so it
    // gets a description of its own, opened by name (close-on-exec here, and never this
    // process's controlling terminal: O_NOCTTY).
    try {
      this.slave = openSync(name, fsConstants.O_RDWR | fsConstants.O_NOCTTY);
    } finally {
      closeSync(slave);
    }
    this.reader = new ReadStream(master);
    this.reader.on('data', onData);
    // EIO once the child's last descriptor of the slave is closed: everything it wrote is read.
    this.reader.on('error', () => this.markClosed());
    this.reader.on('end', () => this.markClosed());
  }

  /** The child has its copies of the slave: ours is closed, so the child's end closes the terminal. */
  handedOver(): void {
    if (this.slave !== undefined) closeSync(this.slave);
    this.slave = undefined;
  }

  /** Resolves once everything the child wrote has been read (its side is closed), or the master is. */
  drained(): Promise<void> {
    return new Promise((resolve) => (this.closed ? resolve() : this.closedFns.push(resolve)));
  }

  /** Writes `data` to the terminal, in order after what came before. */
  write(data: Buffer): void {
    if (!this.open) return;
    // A pty master takes what its buffer holds, EAGAIN past it: each write waits for the last.
    this.writing = this.writing.then(() => writeAll(this.master, data, () => this.open));
  }

  resize(cols: number, rows: number): void {
    if (!this.open) return;
    try {
      native().resize(this.master, cols, rows);
    } catch {
      // the child has just ended
    }
  }

  pause(): void {
    this.reader.pause();
  }

  resume(): void {
    this.reader.resume();
  }

  /**
   * Closes the master (the stream owns it: closed once, never a number reused since): the kernel
   * hangs the terminal up, SIGHUP to the session it controls. What the child writes after is lost.
   */
  close(): void {
    this.open = false;
    this.reader.destroy();
    if (this.slave !== undefined) closeSync(this.slave);
    this.slave = undefined;
    this.markClosed();
  }

  private markClosed(): void {
    this.closed = true;
    for (const fn of this.closedFns.splice(0)) fn();
  }
}

/** Writes all of `data` to the non-blocking `fd`, waiting while the terminal's buffer is full. */
function writeAll(fd: number, data: Buffer, open: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const next = (offset: number) => {
      // Closed meanwhile (the child ended): its number may name another file by now.
      if (offset >= data.length || !open()) return resolve();
      write(fd, data, offset, data.length - offset, null, (err, n) => {
        if (err?.code === 'EAGAIN') return void setTimeout(() => next(offset), 5);
        // Closed: the child has ended, and what it was sent is moot.
        if (err) return resolve();
        next(offset + n);
      });
    };
    next(0);
  });
}
