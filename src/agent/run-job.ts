/**
 * Runs one job inside a worker: fetch the spec, run the command in its own process group, stream
 * its output, heartbeat, obey cancel and timeout, report how it ended. Used by the local agent
 * host for each of its workers and by `berth agent` on any other machine.
 */
import { hostname } from 'node:os';
import { outOfMemory, type JobCgroup } from './cgroups.js';
import { uploadArtifacts } from './artifacts.js';
import { AgentClient, AgentHttpError } from './client.js';
import { endProcesses, type JobIdentity } from './identity.js';
import { LogUploader } from './log-uploader.js';
import {
  WORKER_CREDENTIAL_HEADER,
  type FinishRequest,
  type HeartbeatResponse,
  type NextJob,
  type StartResponse,
} from './protocol.js';
import { JobProcess } from './job-process.js';
import type { JobImage, SandboxSpec } from './sandbox.js';
import { imageCommand, imageEnv } from '../images/image-config.js';
import { lookupInImage } from '../images/image-lookup.js';
import { JobTerminal, type HeldTerminal } from './job-terminal.js';
import { RankLabel } from './rank-label.js';

export interface RunJobOptions {
  url: string;
  token: string;
  /**
   * What to run, when the server gave it with the job (a pilot's next job, already running):
   * no start call is made.
   */
  spec?: StartResponse;
  workdir: string;
  /** Extra environment for the job (e.g. BERTH_WORKER_ID, used to recognise strays). */
  env?: Record<string, string>;
  /**
   * Called once the job's process exists, with its pid (= its process group id), and the job as
   * it runs: what `berth exec` enters (exec-process.ts).
   */
  onSpawn?: (pid: number, running: RunningJob) => void;
  /** An interactive job's terminal, as soon as it is open (before the command starts): what `berth attach` takes. */
  onTerminal?: (terminal: HeldTerminal) => void;
  /**
   * Called once the job's process group is gone (killed after its exit), before the report; with
   * an identity, once every process of its uid is gone too (`clean`), or failed to go.
   */
  onExit?: (clean: boolean) => void;
  retryForMs?: number;
  /** The cgroups the job runs in (the local factory's enforcement of its requests). */
  cgroup?: JobCgroup;
  /**
   * The uid and gid the job runs under (the local factory's isolation, agent/identity.ts): its
   * home and temporary directory are its working directory, and when it ends every process of
   * its uid ends with it — before its artifacts are read, so nothing of it can change them then.
   */
  identity?: JobIdentity;
  /**
   * Namespaces of its own (sandbox.ts): a private /tmp, /dev/shm, /dev and process view, and an
   * end the kernel vouches for. Absent: the host's, as the agent's.
   */
  sandbox?: SandboxSpec;
  /**
   * With a sandbox: the OCI image it runs in. Its command and environment combine with the
   * image's config as `docker run` does (images/image-config.ts).
   */
  image?: JobImage;
  /** Amends the outcome before it is reported (the agent knows why its job was killed). */
  amend?: (result: FinishRequest) => FinishRequest | Promise<FinishRequest>;
  /** Which member of a gang job this agent runs (0 by default: the only one). */
  rank?: number;
  /**
   * A pilot's agent: its finish asks for the worker's next job too, waiting up to `waitSeconds`,
   * and `got` receives the answer (undefined: the worker does not stay).
   */
  askNext?: { waitSeconds: number; credential: string; got: (next: NextJob | undefined) => void };
  /** The name its gang's peers reach this machine by (BERTH_HOSTS): this host's name by default. */
  host?: string;
  /**
   * Whether nobody waits for the outcome any more (the local host's server is gone or stopping):
   * the job was stopped for that, and the next server says so ("server restarted"), not the kill.
   */
  abandoned?: () => boolean;
}

/** A job's process as it runs, and the environment it was given: what an exec into it gets. */
export interface RunningJob {
  /** Which job it is: a pilot's worker runs one job after another, and an exec names its job. */
  jobId: number;
  process: JobProcess;
  env: NodeJS.ProcessEnv;
}

/**
 * How long after its spawn a job's first heartbeat is sent: a job that ends sooner (most short
 * jobs) never needs one, and a cancel reaches a job at most this much later than it would.
 */
const FIRST_HEARTBEAT_MS = 200;

/** How long one start call waits at the server for a gang's other members. */
const RENDEZVOUS_WAIT_SECONDS = 10;

/** Variables passed through from the agent's own environment; everything else stays out. */
const PASS_THROUGH = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'TZ', 'TERM', 'TMPDIR'];

/** What Slurm sets for a job's GRES, which its agent passes on. */
const SLURM_DEVICE_VARIABLES = [
  'CUDA_VISIBLE_DEVICES',
  'GPU_DEVICE_ORDINAL',
  'ROCR_VISIBLE_DEVICES',
  'ZE_AFFINITY_MASK',
];

/** What every job gets of the agent's own environment: read once (a pilot runs many jobs). */
let inherited: NodeJS.ProcessEnv | undefined;

function inheritedEnv(): NodeJS.ProcessEnv {
  if (inherited) return inherited;
  const env: NodeJS.ProcessEnv = {};
  for (const k of PASS_THROUGH) if (process.env[k] !== undefined) env[k] = process.env[k];
  // Locale, and what Slurm tells a job about its allocation (SLURM_JOB_ID, SLURMD_NODENAME, …),
  // the devices it bound (GRES: CUDA_VISIBLE_DEVICES, …) among it.
  for (const [k, v] of Object.entries(process.env)) if (/^(LC_|SLURM_|SLURMD_)/.test(k)) env[k] = v;
  if (process.env.SLURM_JOB_ID !== undefined)
    for (const k of SLURM_DEVICE_VARIABLES) if (process.env[k] !== undefined) env[k] = process.env[k];
  return (inherited = env);
}

/** The PATH of a job in an image that sets none (Docker's). */
const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** A job under its own uid: the agent's user, home and temporary directory are not its own. */
function ownUserEnv(opts: RunJobOptions): NodeJS.ProcessEnv {
  // In an image, little of the host's environment (its paths name the host's files): Docker's
  // PATH under the image's own variables, and a home the job may write (the image's is most
  // often /root, not its uid's). Its own variables are laid over this (jobEnv).
  if (opts.image)
    return {
      PATH: IMAGE_PATH,
      ...pick(inheritedEnv(), ['LANG', 'TZ', 'TERM']),
      ...imageEnv(opts.image.config, {}),
      HOME: opts.workdir,
    };
  if (!opts.identity) return inheritedEnv();
  const { USER: _user, LOGNAME: _logname, ...env } = inheritedEnv();
  return { ...env, HOME: opts.workdir, TMPDIR: opts.workdir };
}

function pick(env: NodeJS.ProcessEnv, keys: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of keys) if (env[k] !== undefined) out[k] = env[k];
  return out;
}

function jobEnv(opts: RunJobOptions, spec: StartResponse): NodeJS.ProcessEnv {
  return {
    ...ownUserEnv(opts),
    ...spec.env,
    ...resourceEnv(spec.resources),
    ...opts.env,
    BERTH_URL: opts.url,
    BERTH_TOKEN: opts.token,
    BERTH_JOB_ID: String(spec.jobId),
    BERTH_PROJECT: spec.project,
    BERTH_WORKDIR: opts.workdir,
    BERTH_RANK: String(spec.rank),
    BERTH_WORLD_SIZE: String(spec.worldSize),
    BERTH_HOSTS: spec.hosts.join(','),
  };
}

/** `scratch-db` + `url` → BERTH_RESOURCE_SCRATCH_DB_URL */
export const resourceVariable = (type: string, field: string): string =>
  `BERTH_RESOURCE_${type}_${field}`.toUpperCase().replace(/[^A-Z0-9_]/g, '_');

function resourceEnv(resources: StartResponse['resources']): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [type, metadata] of Object.entries(resources)) {
    for (const [field, value] of Object.entries(metadata)) env[resourceVariable(type, field)] = value;
  }
  return env;
}

/** Starts the member's part: waits (long polls) until every member of its gang has arrived. */
async function start(client: AgentClient, opts: RunJobOptions): Promise<StartResponse> {
  const query = new URLSearchParams({
    rank: String(opts.rank ?? 0),
    host: opts.host ?? hostname(),
    wait: String(RENDEZVOUS_WAIT_SECONDS),
  });
  for (;;) {
    const spec = await client.post<StartResponse>(`/start?${query.toString()}`);
    if (spec) return spec;
  }
}

/** A one-member job's spec given ahead of its start names no host: this one is it. */
function ownHost(spec: StartResponse, opts: RunJobOptions): StartResponse {
  return spec.worldSize === 1 ? { ...spec, hosts: [opts.host ?? hostname()] } : spec;
}

export async function runJob(opts: RunJobOptions): Promise<FinishRequest> {
  const client = new AgentClient({ url: opts.url, token: opts.token, retryForMs: opts.retryForMs });
  const spec = opts.spec ? ownHost(opts.spec, opts) : await start(client, opts);
  const rankQuery = `rank=${spec.rank}`;
  const logs = new LogUploader(client);
  const result = await execute(opts, spec, client, logs);
  // The kernel's OOM kill looks like any SIGKILL from inside; only the group can tell.
  if (opts.cgroup && result.outcome === 'exited' && result.exitCode !== 0) {
    const oom = await outOfMemory(opts.cgroup, result);
    if (oom) {
      result.message = oom;
      logs.write(`berth: ${oom}\n`);
    }
  }
  // Artifacts of a run that ended by itself or by its timeout; a stopped one keeps none.
  if (spec.artifacts?.length && (result.outcome === 'exited' || result.outcome === 'timeout')) {
    await uploadArtifacts({
      url: opts.url,
      token: opts.token,
      workdir: opts.workdir,
      ...(opts.identity ? { owner: opts.identity.uid } : {}),
      patterns: spec.artifacts,
      client,
      log: (line) => logs.write(line),
      heartbeatSeconds: spec.heartbeatSeconds,
      retryForMs: opts.retryForMs,
    });
  }
  try {
    await logs.flush();
  } catch {
    // Output that could not be uploaded is lost, but the job's outcome must still be reported.
  }
  const reported = opts.amend ? await opts.amend(result) : result;
  if (opts.abandoned?.()) return reported;
  if (opts.askNext)
    opts.askNext.got(
      // The next job only for the worker's credential, which the job's code never held.
      await client.post<NextJob>(
        `/finish?${rankQuery}&next=${opts.askNext.waitSeconds}`,
        reported,
        undefined,
        {
          [WORKER_CREDENTIAL_HEADER]: opts.askNext.credential,
        },
      ),
    );
  else await client.post(`/finish?${rankQuery}`, reported);
  return reported;
}

function execute(
  opts: RunJobOptions,
  spec: StartResponse,
  client: AgentClient,
  logs: LogUploader,
): Promise<FinishRequest> {
  // In an image, its command is the image's Entrypoint with the job's command (or the image's Cmd).
  const command = opts.image ? imageCommand(opts.image.config, spec.command) : spec.command;
  if (!command || command.length === 0) {
    const message = 'the job gives no command, and its image has none (no Entrypoint or Cmd)';
    logs.write(`berth: ${message}\n`);
    return Promise.resolve({ outcome: 'start-failed', exitCode: 127, signal: null, message });
  }
  const env = jobEnv(opts, spec);
  // An image with no shell (distroless, FROM scratch): the command is looked up in its files from
  // here, before the job runs, and run directly (images/image-lookup.ts).
  const lookedUp =
    opts.image !== undefined && lookupInImage(opts.image.root.rootfs, '/bin/sh', undefined) !== undefined;
  if (lookedUp) {
    const file = command[0]!;
    // A relative name with a slash is the job's working directory's, which exec alone can judge.
    const why =
      file.includes('/') && !file.startsWith('/')
        ? undefined
        : lookupInImage(opts.image!.root.rootfs, file, env.PATH);
    if (why) {
      const message =
        why === 'ENOENT'
          ? `cannot run ${JSON.stringify(file)}: command not found`
          : `cannot run ${JSON.stringify(file)}: permission denied`;
      logs.write(`berth: ${message}\n`);
      return Promise.resolve({
        outcome: 'start-failed',
        exitCode: why === 'ENOENT' ? 127 : 126,
        signal: null,
        message,
      });
    }
  }
  if (spec.interactive && !opts.sandbox) {
    const message =
      'an interactive job needs namespaces of its own on its worker (bubblewrap, docs/SECURITY.md): this worker runs jobs without';
    logs.write(`berth: ${message}\n`);
    return Promise.resolve({ outcome: 'start-failed', exitCode: null, signal: null, message });
  }
  return new Promise((resolve) => {
    const file = command[0];
    let stopping: 'timeout' | 'cancelled' | undefined;
    let stopReason: string | undefined;
    let done = false;
    const timers: NodeJS.Timeout[] = [];
    let job: JobProcess | undefined;

    const cannotRun = (code: string | undefined, detail: string): FinishRequest => {
      const message =
        code === 'ENOENT'
          ? `cannot run ${JSON.stringify(file)}: command not found`
          : `cannot run ${JSON.stringify(file)}: ${detail}`;
      logs.write(`berth: ${message}\n`);
      return { outcome: 'start-failed', exitCode: 127, signal: null, message };
    };

    /** Writes the job's output to its log; too much not yet uploaded pauses `source`. */
    const toLog = (source: { pause(): void; resume(): void }, label?: RankLabel) => (chunk: Buffer) => {
      // Too much not yet uploaded: the job waits on its full pipe until the uploads catch up.
      if (!logs.write(label ? label.write(chunk) : chunk)) {
        source.pause();
        void logs.drained().then(() => source.resume());
      }
    };

    // An interactive job's terminal (job-terminal.ts): its command starts once a client attached.
    const terminal = spec.interactive
      ? new JobTerminal(
          { cols: 80, rows: 24 },
          {
            detachGraceMs: spec.interactive.detachGraceSeconds * 1000,
            idleMs: spec.interactive.idleTimeoutSeconds * 1000,
          },
          (why) => stop('cancelled', why),
        )
      : undefined;
    if (terminal) {
      terminal.onOutput(toLog(terminal));
      opts.onTerminal?.({ terminal, jobId: spec.jobId });
    }

    const finish = (r: FinishRequest) => {
      if (done) return;
      done = true;
      for (const t of timers) clearTimeout(t);
      terminal?.end(r);
      if (!job) return resolve(r);
      const started = job;
      started.kill(); // leftovers of the tree end with the job
      // Its end is what the kernel says: its pid namespace is empty (a sandbox), which nothing
      // of it leaves; else, under its own uid, whatever left the group is ended by uid (setsid,
      // nohup, a double fork, a daemon hopping pids).
      void started
        .gone()
        .then(
          async (gone) => gone && (opts.identity && !opts.sandbox ? await endProcesses(opts.identity) : true),
        )
        .then((clean) => {
          opts.onExit?.(clean);
          resolve(r);
        });
    };

    const stop = (why: 'timeout' | 'cancelled', message: string) => {
      if (stopping || done) return;
      // Stopped before its command started (an interactive job no client attached to).
      if (!job) return finish({ outcome: why, exitCode: null, signal: null, message });
      // A command that has already exited on its own ended as it did: its exit, perhaps still
      // queued behind this request, is its outcome (a preempted job that had finished succeeds).
      const { child } = job;
      if (!child.pid || job.exited()) return;
      stopping = why;
      stopReason = message;
      job.terminate();
      // A terminal's hang-up ends what runs on it as a login's does (SIGHUP to its session).
      terminal?.hangUp();
      const started = job;
      timers.push(setTimeout(() => started.kill(), spec.graceSeconds * 1000));
    };

    const launch = () => {
      if (done) return;
      const started = JobProcess.start({
        command,
        workdir: opts.workdir,
        env,
        ...(opts.identity ? { identity: opts.identity } : {}),
        ...(opts.cgroup ? { cgroup: opts.cgroup } : {}),
        ...(opts.sandbox ? { sandbox: opts.sandbox } : {}),
        ...(opts.image ? { image: opts.image.root } : {}),
        ...(lookedUp ? { lookedUp } : {}),
        ...(terminal?.slave !== undefined ? { terminal: terminal.slave } : {}),
      });
      job = started;
      const { child } = started;
      for (const stream of [child.stdout, child.stderr]) {
        if (!stream) continue;
        // Bytes as the job wrote them: no decoding (a log need not be UTF-8). A gang's members
        // share one log: each line says which rank wrote it.
        const label = spec.worldSize > 1 ? new RankLabel(`${spec.rank}: `) : undefined;
        stream.on('data', toLog(stream, label));
        stream.on('end', () => {
          if (label) logs.write(label.end());
        });
      }

      child.on('error', (err: NodeJS.ErrnoException) => finish(cannotRun(err.code, err.message)));

      child.on('spawn', () => {
        terminal?.spawned();
        if (child.pid) opts.onSpawn?.(child.pid, { jobId: spec.jobId, process: started, env });
        if (spec.timeoutSeconds !== null) {
          timers.push(
            setTimeout(
              () => stop('timeout', `timed out after ${spec.timeoutSeconds}s`),
              spec.timeoutSeconds * 1000,
            ),
          );
        }
      });

      // Output may still be in flight when 'exit' fires; 'close' waits for the pipes (a terminal:
      // until its master has read all), unless a stray grandchild holds them open, so wait for it
      // at most briefly.
      child.on('exit', (code, signal) => {
        void started.notRunnable.then((why) => {
          if (why) return finish(cannotRun(why, `spawn ${file} ${why}`));
          const result: FinishRequest = {
            outcome: stopping ?? 'exited',
            ...started.status(code, signal),
            ...(stopReason ? { message: stopReason } : {}),
          };
          const closeTimer = setTimeout(() => finish(result), 1000);
          const closed = () => {
            clearTimeout(closeTimer);
            finish(result);
          };
          if (terminal) return void terminal.drained().then(closed);
          child.once('close', closed);
          if (child.stdout!.readableEnded && child.stderr!.readableEnded) closed();
        });
      });
    };

    timers.push(setTimeout(() => void heartbeat(), FIRST_HEARTBEAT_MS));
    if (terminal) void terminal.waitForClient().then((attached) => attached && launch());
    else launch();

    /** Long-polls the server: each call is a heartbeat, and returns early when the job is cancelled. */
    const heartbeat = async () => {
      const wait = Math.max(1, Math.floor(spec.heartbeatSeconds / 3));
      while (!done) {
        try {
          const r = await client.post<HeartbeatResponse>(`/heartbeat?wait=${wait}&rank=${spec.rank}`);
          if (r?.cancel) stop('cancelled', r.reason ?? 'cancelled');
          // Told to stop, the server answers every poll at once: from then on the heartbeat only
          // says the agent lives, at the poll's pace, until the job has ended.
          if (r?.cancel) await new Promise((wake) => timers.push(setTimeout(wake, wait * 1000)));
        } catch (e) {
          // The server no longer knows this job (token revoked), or has been unreachable for
          // longer than the client retries (its worker is lost by now): stop it, nobody will
          // collect it.
          const message = e instanceof Error ? e.message : String(e);
          const refused = e instanceof AgentHttpError && e.status < 500;
          stop(
            'cancelled',
            refused ? `server refused heartbeat: ${message}` : `server unreachable: ${message}`,
          );
          return;
        }
      }
    };
  });
}
