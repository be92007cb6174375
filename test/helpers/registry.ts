/**
 * A real OCI registry for the image tests: Debian's `docker-registry` (the CNCF distribution
 * registry) on 127.0.0.1, storing in a scratch directory, and images built here with umoci from
 * files already on the machine (busybox from `busybox-static`), pushed with skopeo. Nothing is
 * downloaded. CI installs the four packages (.ci/run).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { waitFor } from './wait.js';

export interface TestRegistry {
  /** `127.0.0.1:PORT` */
  host: string;
  /** With `private`: the one login it takes; it answers nothing without it (401). */
  login?: { username: string; password: string };
  /** The requests the registry has answered so far, `METHOD path` each (its access log). */
  requests(): string[];
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The private registry's one login. Its htpasswd line holds the password's bcrypt hash, made once
 * (cost 4: the registry checks it on every request) with
 * `python3 -c "import crypt; print(crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))"`.
 */
export const TEST_LOGIN = { username: 'ci', password: 'berth-test-password' };
const TEST_LOGIN_HTPASSWD = 'ci:$2b$04$IC2VLcrCOrZgT6pCCkg/0ewM8R4flftfbuk1PzyDT3Lj0mfJM837e';

/** Starts a registry storing under `dir`; `private`: one that answers only TEST_LOGIN. */
export async function startRegistry(dir: string, opts: { private?: boolean } = {}): Promise<TestRegistry> {
  const port = await freePort();
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'registry.yml');
  if (opts.private) writeFileSync(join(dir, 'htpasswd'), `${TEST_LOGIN_HTPASSWD}\n`);
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log: { level: info, formatter: json }',
      `storage: { filesystem: { rootdirectory: ${join(dir, 'storage')} }, delete: { enabled: true } }`,
      `http: { addr: "127.0.0.1:${port}" }`,
      ...(opts.private ? [`auth: { htpasswd: { realm: berth-test, path: ${join(dir, 'htpasswd')} } }`] : []),
    ].join('\n'),
  );
  const child: ChildProcess = spawn('/usr/bin/docker-registry', ['serve', config], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const requests: string[] = [];
  let partial = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        if (entry.msg === 'response completed')
          requests.push(`${String(entry['http.request.method'])} ${String(entry['http.request.uri'])}`);
      } catch {
        // not a log entry
      }
    }
  });
  const host = `127.0.0.1:${port}`;
  await waitFor(`the registry on ${host}`, async () => {
    if (child.exitCode !== null) throw new Error(`docker-registry exited ${child.exitCode}`);
    try {
      // Up once it answers; a private one with 401.
      const status = (await fetch(`http://${host}/v2/`)).status;
      return status === 200 || (opts.private === true && status === 401);
    } catch {
      return false;
    }
  });
  return {
    host,
    ...(opts.private ? { login: TEST_LOGIN } : {}),
    requests: () => [...requests],
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface ImageSpec {
  /** Files in the image besides busybox (`/bin/busybox` and its applets): path → text. */
  files?: Record<string, string>;
  /** Megabytes of incompressible filler in `/filler` (a bigger image). */
  fillerMegabytes?: number;
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
  /** busybox's commands linked in /bin (default: sh, cat, echo, ls, …); without sh, a shell-less image. */
  applets?: string[];
}

let pushes = 0;

/** skopeo's `flag user:password` for a private registry (a test's own, on its command line). */
const creds = (registry: TestRegistry, flag: string): string[] =>
  registry.login ? [flag, `${registry.login.username}:${registry.login.password}`] : [];

const APPLETS = ['sh', 'cat', 'echo', 'ls', 'id', 'touch', 'sleep', 'test', 'pwd', 'env'];

/**
 * Builds an image from `spec` with umoci in `work` and pushes it to `registry` as `name:tag` with
 * skopeo; returns its digest (the registry's).
 */
export function pushImage(
  work: string,
  registry: TestRegistry,
  name: string,
  tag: string,
  spec: ImageSpec,
): string {
  // A directory of its own each time: a tag may be pushed again with other files.
  const base = `${name.replace(/\W/g, '_')}-${tag}-${++pushes}`;
  const layout = join(work, `${base}-layout`);
  const bundle = join(work, `${base}-bundle`);
  const umoci = (...args: string[]) => execFileSync('/usr/bin/umoci', args, { stdio: 'pipe' });
  umoci('init', '--layout', layout);
  umoci('new', '--image', `${layout}:img`);
  umoci('unpack', '--image', `${layout}:img`, bundle);
  const root = join(bundle, 'rootfs');
  mkdirSync(join(root, 'bin'), { recursive: true });
  execFileSync('cp', ['/usr/bin/busybox', join(root, 'bin', 'busybox')]);
  for (const applet of spec.applets ?? APPLETS) symlinkSync('busybox', join(root, 'bin', applet));
  for (const [path, text] of Object.entries(spec.files ?? {})) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
    chmodSync(join(root, path), 0o644);
  }
  if (spec.fillerMegabytes)
    execFileSync(
      'dd',
      ['if=/dev/urandom', `of=${join(root, 'filler')}`, 'bs=1M', `count=${spec.fillerMegabytes}`],
      {
        stdio: 'ignore',
      },
    );
  // Readable by every uid whatever the umask (a server in this process sets 077): as real images are.
  execFileSync('chmod', ['-R', 'go+rX', root]);
  umoci('repack', '--image', `${layout}:img`, bundle);
  const config = ['config', '--image', `${layout}:img`];
  for (const e of spec.entrypoint ?? []) config.push('--config.entrypoint', e);
  for (const c of spec.cmd ?? []) config.push('--config.cmd', c);
  for (const e of spec.env ?? ['PATH=/bin']) config.push('--config.env', e);
  config.push('--config.workingdir', spec.workingDir ?? '/');
  umoci(...config);
  execFileSync(
    '/usr/bin/skopeo',
    [
      'copy',
      '--quiet',
      '--dest-tls-verify=false',
      ...creds(registry, '--dest-creds'),
      `oci:${layout}:img`,
      `docker://${registry.host}/${name}:${tag}`,
    ],
    { stdio: 'pipe' },
  );
  // The manifest as served, its sha256 the digest: one read, and no blob read (a test counts those).
  const manifest = execFileSync('/usr/bin/skopeo', [
    'inspect',
    '--raw',
    '--tls-verify=false',
    ...creds(registry, '--creds'),
    `docker://${registry.host}/${name}:${tag}`,
  ]);
  const digest = `sha256:${createHash('sha256').update(manifest).digest('hex')}`;
  return digest;
}

/**
 * Why the tests of jobs in images cannot run here, or false: they need namespaces (`support`,
 * agent/sandbox-probe.ts) and the registry's tools.
 */
export function imageSkip(support: { available: boolean; why?: string }): string | false {
  if (!support.available) return support.why ?? 'no namespaces here';
  return ['/usr/bin/skopeo', '/usr/bin/umoci', '/usr/bin/docker-registry'].every((f) => existsSync(f))
    ? false
    : 'skopeo, umoci and docker-registry are needed (apt-get install skopeo umoci docker-registry)';
}
