/**
 * Whether jobs can get namespaces of their own here (sandbox.ts): bubblewrap and setpriv are
 * installed, the agent is root (bubblewrap then needs no user namespace, which some kernels and
 * distributions refuse to unprivileged users), and a trial sandbox runs. Asked once per process:
 * the answer does not change while it runs.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { BWRAP, SETPRIV, sandboxArgv } from './sandbox.js';

export type SandboxSupport = { available: true } | { available: false; why: string };

/** Where to get bubblewrap, for the message that says it is missing. */
export const BWRAP_PACKAGE =
  'the bubblewrap package (Debian, Ubuntu: apt-get install bubblewrap; RHEL, Fedora: dnf install bubblewrap)';

let probed: SandboxSupport | undefined;

export function probeSandbox(): SandboxSupport {
  return (probed ??= probe());
}

function probe(): SandboxSupport {
  if (process.platform !== 'linux')
    return { available: false, why: `namespaces are Linux's (this is ${process.platform})` };
  if (process.geteuid?.() !== 0)
    return {
      available: false,
      why: `namespaces per job need root (the agent runs as uid ${process.geteuid?.()})`,
    };
  if (!existsSync(BWRAP)) return { available: false, why: `${BWRAP} is missing: install ${BWRAP_PACKAGE}` };
  if (!existsSync(SETPRIV)) return { available: false, why: `${SETPRIV} is missing: install util-linux` };
  // The very argv jobs get (an older bubblewrap without --size or --perms fails here, not later).
  const [bwrap, ...args] = sandboxArgv({ workdir: '/', tmpBytes: 2 ** 20 }, ['/bin/true']);
  const trial = spawnSync(bwrap!, args, {
    encoding: 'utf8',
    timeout: 10_000,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  if (trial.status !== 0)
    return {
      available: false,
      why: `bubblewrap cannot make namespaces here: ${(trial.stderr || trial.error?.message || `exit ${trial.status}`).trim()}`,
    };
  return { available: true };
}
