/**
 * A job's private view of the machine (docs/SECURITY.md, "Namespaces"): its own pid, mount and ipc
 * namespaces, made by bubblewrap (`bwrap`, Debian's `bubblewrap`, what Flatpak runs apps in), as
 * root, before the job's command drops to the job's uid with util-linux's `setpriv`:
 *
 * - a `/proc` that shows only the job's processes (not other jobs' command lines, not the
 *   server's), and a pid namespace whose end ends every process in it: when the job's command
 *   exits, bubblewrap's init exits, and the kernel kills whatever the job left — a daemon that
 *   changed its pid a thousand times, left its process group and session, included — before the
 *   init is gone (job-process.ts waits for that);
 * - a `/tmp` and a `/dev/shm` of its own (tmpfs, sized, charged to the job's memory group, gone
 *   with it), so a file planted there by another tenant, or a FIFO or link the job leaves, meets
 *   no one else;
 * - a `/dev` of its own with the usual nodes (null, zero, full, random, urandom, tty, pts) and
 *   only the device files it was given, at their own paths;
 * - System V IPC of its own; the host's network unless the target says `network: none`.
 *
 * The rest of the filesystem is the host's, as without namespaces (the data directory stays
 * sealed by its modes). Paths the job is given that lie under its private mounts (its working
 * directory in a `/tmp` work root, the CA file it is told of) are bound back in.
 *
 * Pure: the argv only. The probe that says whether bubblewrap runs here is sandbox-probe.ts.
 */
import type { ImageConfig } from '../images/image-config.js';
import type { JobIdentity } from './identity.js';

export interface SandboxSpec {
  /** The job's working directory (its cwd). */
  workdir: string;
  /** Other paths the job is given (the CA file, berth itself): bound back where a private mount hides them. */
  keep?: string[];
  /** The device files the job was given: the only ones in its /dev besides the usual nodes. */
  devices?: string[];
  /** The size of its /tmp, and of its /dev/shm, each (bytes). */
  tmpBytes: number;
  /** `none`: a network namespace of its own with only a loopback device. */
  network?: 'host' | 'none';
}

/** Where the job's private mounts go: what lies under them must be bound back to be seen. */
const PRIVATE = ['/tmp', '/dev'];

const under = (path: string, dir: string): boolean => path === dir || path.startsWith(`${dir}/`);

/** The directories above an absolute path, outermost first: `/a/b/c` → `/a`, `/a/b`. */
function ancestors(path: string): string[] {
  const parts = path.split('/').filter(Boolean).slice(0, -1);
  return parts.map((_, i) => `/${parts.slice(0, i + 1).join('/')}`);
}

/** Where bubblewrap and setpriv are looked for (Debian's places; the probe says when missing). */
export const BWRAP = '/usr/bin/bwrap';
export const SETPRIV = '/usr/bin/setpriv';
export const SETSID = '/usr/bin/setsid';

/** The file descriptor bubblewrap writes the namespace's init pid to (job-process.ts reads it). */
export const INFO_FD = 3;

/**
 * A job in an OCI image (images/): the image's unpacked filesystem as its root, shared read-only
 * by every job of the image, under a writable layer of the job's own (overlayfs), gone with it.
 */
export interface ImageRoot {
  /** The image's unpacked filesystem (images/image-cache.ts), never written. */
  rootfs: string;
  /** An empty directory of the job's own, root's: its layer's upper and work directories, and the root they make. */
  layer: string;
  /** Where the command starts inside the image (the image's working directory, or the job's). */
  cwd: string;
}

/** A job's image as its agent gets it: where its root is, and what the image's config says it runs. */
export interface JobImage {
  root: ImageRoot;
  config: ImageConfig;
}

/**
 * A job's image: `rootfs` under its `layer`, starting in the image's working directory, or in the
 * job's own (`workdir`) when the image names none.
 */
export function jobImage(rootfs: string, config: ImageConfig, layer: string, workdir: string): JobImage {
  return { root: { rootfs, layer, cwd: config.workingDir === '/' ? workdir : config.workingDir }, config };
}

/** util-linux's unshare: mounts the image's overlay in a mount namespace of its own, and enters the image as the job. */
export const UNSHARE = '/usr/bin/unshare';

/**
 * Mounts the job's overlay (lower: the image, upper: its layer) at LAYER/root in the private mount
 * namespace `unshare` made — gone, unmounted, when the last process in it is — then runs the rest.
 */
const OVERLAY =
  'l=$1 d=$2; shift 2; mkdir -m 0755 -p "$d/upper" "$d/work" "$d/root" && ' +
  'mount -t overlay -o "lowerdir=$l,upperdir=$d/upper,workdir=$d/work" berth-image "$d/root" && exec "$@"';

/** Characters overlayfs's mount options give a meaning to (separators, escapes): refused in its paths. */
const OVERLAY_SPECIAL = /[,:\\\n]/;

/**
 * The argv (from `bwrap` on) that runs `command` in a sandbox: as `identity` when given (else as
 * the caller, root). `command` is what runs after the drop, with the job's environment and cwd.
 *
 * In an image, the namespaces are made as without one, their private mounts made inside the
 * image's root (its /proc, /dev, /tmp, /dev/shm, the job's working directory and the files it is
 * given bound in at their paths); then util-linux's `unshare --root` enters it and drops to the
 * job's uid — the host's own binary, loaded before the image is its root, so the image needs no
 * tool of berth's (its /bin/sh runs the command's look-up; an image without one has the command
 * looked up in its files before, images/image-lookup.ts).
 */
export function sandboxArgv(
  spec: SandboxSpec,
  command: string[],
  identity?: JobIdentity,
  image?: ImageRoot,
  terminal = false,
): string[] {
  if (image && (OVERLAY_SPECIAL.test(image.rootfs) || OVERLAY_SPECIAL.test(image.layer)))
    throw new Error(
      `an image's paths cannot hold , : or \\ (overlayfs options): ${image.rootfs}, ${image.layer}`,
    );
  const size = String(spec.tmpBytes);
  /** Where a path of the job's is, seen from bubblewrap: inside the image's root when it has one. */
  const root = image ? `${image.layer}/root` : '';
  const at = (path: string) => `${root}${path}`;
  const argv = [
    BWRAP,
    // The init dies with bwrap, which dies with its parent: nothing of the job outlives its agent.
    '--die-with-parent',
    // A session and process group of the job's own, led by the init: its id (the init's pid
    // outside) is the group a graceful stop signals, without signalling bwrap itself.
    '--new-session',
    '--unshare-pid',
    '--unshare-ipc',
    ...(spec.network === 'none' ? ['--unshare-net'] : []),
    '--bind',
    '/',
    '/',
    '--proc',
    at('/proc'),
    '--dev',
    at('/dev'),
    '--perms',
    '1777',
    '--size',
    size,
    '--tmpfs',
    at('/tmp'),
    '--perms',
    '1777',
    '--size',
    size,
    '--tmpfs',
    at('/dev/shm'),
  ];
  // In an image every path of the host is hidden; else what lies under the private mounts.
  const hidden = (path: string) => image !== undefined || PRIVATE.some((dir) => under(path, dir));
  // bubblewrap makes the directories above a mount point 0700, root's: the job could reach what
  // is bound there only by a relative path. Made first, traversable (they hold nothing else).
  const made = new Set<string>();
  const bind = (how: string, path: string) => {
    for (const dir of ancestors(path))
      if (!made.has(dir) && !PRIVATE.includes(dir) && dir !== '/dev/shm') {
        made.add(dir);
        argv.push('--perms', '0711', '--dir', at(dir));
      }
    argv.push(how, path, at(path));
  };
  if (hidden(spec.workdir)) bind('--bind', spec.workdir);
  for (const path of new Set(spec.keep ?? []))
    if (hidden(path) && path !== spec.workdir) bind('--ro-bind', path);
  for (const file of spec.devices ?? []) bind('--dev-bind', file);
  argv.push('--chdir', image ? '/' : spec.workdir, '--info-fd', String(INFO_FD), '--');
  // An interactive job's terminal (job-terminal.ts) becomes its command's controlling one, in a
  // session the command leads inside the namespace — as root, before the drop, with the host's
  // util-linux: a shell's job control and ^C work as on a login. Not a process group's leader
  // (the init leads bubblewrap's), so setsid does not fork: the init's child stays the command.
  if (terminal) argv.push(SETSID, '--ctty');
  if (image) {
    const drop = identity ? [`--setuid=${identity.uid}`, `--setgid=${identity.gid}`] : [];
    argv.push(UNSHARE, `--root=${root}`, `--wd=${image.cwd}`, ...drop, '--');
    return [
      UNSHARE,
      '--mount',
      '--propagation',
      'private',
      '--',
      '/bin/sh',
      '-c',
      OVERLAY,
      'berth-image',
      image.rootfs,
      image.layer,
      ...argv,
      ...command,
    ];
  }
  if (identity)
    argv.push(SETPRIV, `--reuid=${identity.uid}`, `--regid=${identity.gid}`, '--clear-groups', '--');
  return [...argv, ...command];
}
