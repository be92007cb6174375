/**
 * The descriptors a child of this process would inherit without being given them, sealed off.
 *
 * A descriptor opened without close-on-exec passes to every program this process starts. Node
 * opens its own with it; node-pty's openpty(3) does not, nor do descriptors this process was
 * started with (its parent's). An interactive job's terminal held here would pass to the next
 * job started — another tenant's, which could then read that terminal and type into it. So every
 * child that runs a job's code is started with each such descriptor replaced, in the child, by
 * /dev/null (libuv dup2s a stdio entry over its number before the exec); /proc/self/fdinfo says
 * which lack close-on-exec.
 */
import { openSync, readdirSync, readFileSync, constants as fsConstants } from 'node:fs';
import type { StdioOptions } from 'node:child_process';

/** fcntl.h's O_CLOEXEC, as /proc/PID/fdinfo's `flags` (octal) shows it. */
const O_CLOEXEC = 0o2000000;

let devNull: number | undefined;

/** The descriptors of this process, above stderr, that a child would inherit. */
export function inheritable(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc/self/fdinfo')) {
    const fd = Number(name);
    if (!(fd > 2)) continue;
    let info: string;
    try {
      info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // the directory's own descriptor, closed by now
    }
    const flags = /^flags:\s*([0-7]+)$/m.exec(info)?.[1];
    if (flags !== undefined && (parseInt(flags, 8) & O_CLOEXEC) === 0) out.push(fd);
  }
  return out;
}

/** `stdio` with every inheritable descriptor it does not give the child replaced by /dev/null. */
export function sealedStdio(stdio: Exclude<StdioOptions, string>): Exclude<StdioOptions, string> {
  const out = [...stdio];
  for (const fd of inheritable()) {
    const given = out[fd];
    if (given !== undefined && given !== 'ignore' && given !== null) continue;
    devNull ??= openSync('/dev/null', fsConstants.O_RDWR);
    while (out.length < fd) out.push('ignore');
    out[fd] = devNull;
  }
  return out;
}
