/**
 * `berth agent`: the agent of one worker on any machine that reaches the server over HTTP (a Slurm
 * job's, for one). It starts with a one-time credential (BERTH_AGENT_CREDENTIAL, never on the
 * command line, where `ps` shows it), registers its worker, which spends the credential and
 * hands it the job's token, runs the job as the local factory's agents do (run-job.ts), and exits.
 * A pilot's agent (a target with `reuse: true`) then asks for its next job with the worker credential
 * its registration gave, and runs one job after another until the server tells it to stop. Each
 * job's working directory is empty at its start and emptied at its end (a pilot's jobs use the same
 * one, in turn), and removed with the agent; stopped by a signal (scancel), it
 * stops the job's processes first. Nothing it holds outlives the worker. A gang job's worker runs
 * one agent per member (its rank), all with the same credential, which is good for that many.
 * Started as root with a uid (`--run-as`, which the slurm factory passes when it submits as root),
 * it runs each job under that uid and ends every process of it before the first job and after
 * each, so that nothing of one job meets the next (docs/SECURITY.md, "Slurm").
 * A job in an OCI image is run in it as on a local factory's worker: the image pulled into the
 * node's cache, which every agent on the node shares (node-images.ts), before the job starts —
 * the job's reason says the pull's progress meanwhile.
 * Its channel to the server (agent-channel.ts), dialled out with the channel credential its
 * registration gave, carries `berth exec`, `attach` and `port-forward` into its running job, as the
 * local factory's agent host does for its own.
 */
import { chownSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openChannel, type AgentChannel } from './agent-channel.js';
import { AgentClient, AgentHttpError } from './client.js';
import { HostExecs, type RunningMember } from './host-exec.js';
import type { HeldTerminal } from './job-terminal.js';
import { errorMessage, postRetrying, trustCa } from './http-post.js';
import { killGroup } from './process-group.js';
import type { AgentImage, FinishRequest, NextJob } from './protocol.js';
import { NodeImages } from './node-images.js';
import { removeBeneath } from './remove-beneath.js';
import { runJob } from './run-job.js';
import { probeSandbox } from './sandbox-probe.js';
import type { JobImage, SandboxSpec } from './sandbox.js';
import { packageRoot } from '../package-root.js';
import { endProcesses, type JobIdentity } from './identity.js';
import { CA_ENV } from './trust.js';

export interface RemoteAgentOptions {
  /** The server's URL, as the agent reaches it. */
  url: string;
  workerId: number;
  credential: string;
  /** Where the job's working directory is made (the system's temporary directory by default). */
  workRoot?: string;
  /** How long to keep trying while the server cannot be reached (server restarts). */
  retryForMs?: number;
  /** Lines about what the agent does (stderr by default). */
  log?: (line: string) => void;
  /** Which member of a gang job it runs (0 by default); `srun` starts one agent per member. */
  rank?: number;
  /** The name the gang's other members reach this machine by (this host's name by default). */
  host?: string;
  /** HTTPS: a CA file (`--ca`) and its certificates, trusted besides the built-in CAs (trust.ts). */
  ca?: { file: string; certificates: string[] };
  /**
   * The uid and gid its jobs run as (`--run-as`; the agent is root): the worker's alone among the
   * live workers of its factory, which is what lets the agent end every process of it before its
   * first job (what an earlier worker's job left on this node) and after each (identity.ts).
   */
  identity?: JobIdentity;
  /**
   * Namespaces per job (sandbox.ts): `auto` where this machine allows them (the agent is root and
   * bubblewrap runs), `required` (else the agent refuses to run), `off`. `tmpBytes`: the size of
   * a job's /tmp and /dev/shm.
   */
  namespaces: { mode: 'auto' | 'required' | 'off'; tmpBytes: number };
  /** The node's image cache (`--image-cache`, node-images.ts), and its bound in bytes. */
  imageCache: { dir: string; bytes?: number };
}

export interface Registration {
  workerId: number;
  jobId: number;
  token: string;
  /** A pilot's credential for its next jobs (service/cluster/agent-registration.ts). */
  workerCredential?: string;
  /** The job's image, pulled on this node before it starts. */
  image?: AgentImage;
  /** The credential of its channel to the server (agent-channel.ts); absent: a server without one. */
  channel?: string;
}

/** How long an agent waits for its channel before its first job starts without it. */
const CHANNEL_WAIT_MS = 5000;

/** A pilot's next job; with `start`, it already runs (no start call to make). */
type PilotJob = Extract<NextJob, { jobId: number }>;

export const REGISTER_PATH = '/api/v1/agent/register';
export const NEXT_PATH = '/api/v1/agent/next';

/** How long a signalled agent may still try to report its job's end before it exits. */
const REPORT_AFTER_SIGNAL_MS = 3000;
/** How long after its job died of a signal the agent waits for the same signal to reach it. */
const SIGNAL_SPREAD_MS = 1000;
/** How long one ask for a pilot's next job waits at the server. */
const NEXT_WAIT_SECONDS = 20;
/**
 * How long the finish of a pilot's job waits for the next one: the job is usually handed over
 * within the finish's own commit; if not, the agent asks (NEXT_WAIT_SECONDS) as usual.
 */
const FINISH_NEXT_WAIT_SECONDS = 1;

/** Resolves once `done()` holds, or after `ms`. */
async function until(done: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

/**
 * POSTs `{workerId}` with a worker's credential as bearer, retrying while the server cannot be
 * reached or answers 5xx (a restart); an AgentHttpError for an answer the agent cannot get past.
 */
async function callServer<T>(
  url: string,
  path: string,
  workerId: number,
  credential: string,
  retryForMs: number,
  what: string,
): Promise<T> {
  const res = await postRetrying(
    url.replace(/\/$/, '') + path,
    { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    JSON.stringify({ workerId }),
    retryForMs,
  );
  if (res.status >= 500) throw new AgentHttpError(res.status, `${what}: server unavailable`);
  if (res.status >= 300) throw new AgentHttpError(res.status, `${what}: ${errorMessage(res.text)}`);
  try {
    return JSON.parse(res.text) as T;
  } catch {
    throw new AgentHttpError(res.status, `${what}: an answer that is not JSON: ${res.text.slice(0, 200)}`);
  }
}

/** Spends the credential: the job's token, or an AgentHttpError the agent cannot get past. */
export function register(
  url: string,
  workerId: number,
  credential: string,
  retryForMs = 60_000,
): Promise<Registration> {
  return callServer(url, REGISTER_PATH, workerId, credential, retryForMs, `registering worker ${workerId}`);
}

/**
 * A pilot waits for its next job: the job and its token, or null when told to stop. `first` is
 * what the last job's finish answered, if it asked.
 */
async function nextJob(
  o: RemoteAgentOptions,
  credential: string,
  log: (line: string) => void,
  first: NextJob | undefined,
): Promise<PilotJob | null> {
  for (let answered = first; ; answered = undefined) {
    const next =
      answered ??
      (await callServer<NextJob>(
        o.url,
        `${NEXT_PATH}?wait=${NEXT_WAIT_SECONDS}`,
        o.workerId,
        credential,
        o.retryForMs ?? 60_000,
        `asking for worker ${o.workerId}'s next job`,
      ));
    if ('jobId' in next) return next;
    if ('stop' in next) {
      log(`worker ${o.workerId} stops: ${next.stop}`);
      return null;
    }
  }
}

/**
 * Empties a job's working directory at its end, for the pilot's next job (cheaper than a new one
 * each time); whether it could. One whose leftovers cannot be removed is dropped whole.
 */
async function emptied(dir: string): Promise<boolean> {
  // Descriptor by descriptor: the job's links are removed, never followed (remove-beneath.ts).
  if ((await removeBeneath(dir, true)).left.length === 0) return true;
  // What a job made unremovable stays; the next job gets a new directory all the same.
  await removeBeneath(dir);
  return false;
}

/** The namespaces this agent's jobs get, said once in its log; undefined: none. */
function sandboxFor(
  o: RemoteAgentOptions,
  log: (line: string) => void,
): Omit<SandboxSpec, 'workdir'> | undefined {
  const { mode, tmpBytes } = o.namespaces;
  if (mode === 'off') return undefined;
  const support = probeSandbox();
  if (!support.available) {
    if (mode === 'required')
      throw new Error(`--namespaces required, but jobs cannot get namespaces here: ${support.why}`);
    log(`jobs run without namespaces of their own: ${support.why}`);
    return undefined;
  }
  // What the job is told of, where its private /tmp would hide it: the CA file, berth itself.
  return { keep: [...(o.ca ? [o.ca.file] : []), packageRoot()], tmpBytes };
}

/** A new working directory (0700), the job's uid's own when it has one. */
function jobDir(root: string, workerId: number, identity: JobIdentity | undefined): string {
  const dir = mkdtempSync(join(root, `berth-worker-${workerId}-`));
  if (identity) chownSync(dir, identity.uid, identity.gid);
  return dir;
}

/** A job's image, ready on this node, and how to let go of it once the job has ended. */
interface PreparedImage {
  image: JobImage;
  release: () => Promise<void>;
}

/**
 * The image of job `job` on this node, pulled if it lacks it while the job's reason says how far
 * the pull has got; or, when it cannot be had, the job's end, reported: it never started, and it
 * is the worker's failure, not the job's (retried on the infrastructure's budget).
 */
async function prepareImage(
  o: RemoteAgentOptions,
  job: PilotJob,
  image: AgentImage,
  workdir: string,
  images: () => NodeImages,
  sandbox: Omit<SandboxSpec, 'workdir'> | undefined,
): Promise<PreparedImage | FinishRequest> {
  const client = new AgentClient({ url: o.url, token: job.token, retryForMs: o.retryForMs });
  let said = Promise.resolve();
  const waiting = (reason: string | null) => {
    // In order, and never in the way: a reason lost is only a reason.
    said = said.then(() =>
      client.post('/waiting', { reason }).then(
        () => {},
        () => {},
      ),
    );
  };
  let failure: string;
  try {
    if (!sandbox) throw new Error('this node runs jobs without namespaces of their own, which images need');
    const prepared = await images().prepare(image, `${o.workerId}-${o.rank ?? 0}`, workdir, waiting);
    await said;
    return prepared;
  } catch (e) {
    failure = `cannot run image ${image.reference} on ${o.host ?? 'this node'}: ${(e as Error).message}`;
  }
  await said;
  const result: FinishRequest = {
    outcome: 'start-failed',
    exitCode: null,
    signal: null,
    message: failure,
    infrastructure: true,
  };
  await client.post(`/finish?rank=${o.rank ?? 0}`, result);
  return result;
}

/**
 * Registers, runs the job, and — on a pilot — each next job the server hands it, until told to
 * stop; resolves with the last job's outcome.
 */
export async function runRemoteAgent(o: RemoteAgentOptions): Promise<FinishRequest> {
  const log = o.log ?? ((line: string) => process.stderr.write(`berth agent: ${line}\n`));
  if (o.ca) trustCa(o.ca.certificates);
  const { identity } = o;
  // What an earlier worker's job left under this uid on this node (a daemon that escaped its
  // Slurm job) is ended before this worker's first job can meet it.
  if (identity && !(await endProcesses(identity)))
    throw new Error(
      `processes of uid ${identity.uid} on this node outlived every kill: cannot run jobs as it`,
    );
  const sandbox = sandboxFor(o, log);
  let nodeImages: NodeImages | undefined;
  const images = () => (nodeImages ??= new NodeImages(o.imageCache.dir, o.imageCache.bytes));
  const reg = await register(o.url, o.workerId, o.credential, o.retryForMs);
  const member = o.rank ? ` as rank ${o.rank}` : '';
  log(
    `worker ${reg.workerId} registered${reg.workerCredential ? ' (a pilot)' : ''}: running job ${reg.jobId}${member}`,
  );
  const sessions = reg.channel ? sessionsOver(o, reg.workerId, reg.channel, log) : undefined;
  let workdir: string | undefined;
  let pid: number | undefined;
  // Stopped from outside (scancel, Slurm's time limit, a node shutting down): the job's processes
  // get the signal too. They are stopped, and the outcome says the worker was lost, and why.
  let stoppedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping`);
    stoppedBy ??= signal;
    if (pid) killGroup(pid, 'SIGTERM');
    // A few seconds to report, not the client's minute of retries: a server that is gone (it is
    // what cancelled the worker after a restart) would keep Slurm waiting until its KillWait.
    setTimeout(() => {
      if (pid) killGroup(pid, 'SIGKILL');
      void (identity ? endProcesses(identity) : Promise.resolve(true)).finally(() => {
        void (workdir ? removeBeneath(workdir) : Promise.resolve()).finally(() =>
          process.exit(128 + (signal === 'SIGINT' ? 2 : 15)),
        );
      });
    }, REPORT_AFTER_SIGNAL_MS).unref();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    let job: PilotJob | null = reg;
    let result: FinishRequest | undefined;
    while (job) {
      let handed: NextJob | undefined;
      const dir = (workdir ??= jobDir(o.workRoot ?? tmpdir(), reg.workerId, identity));
      const prepared = job.image ? await prepareImage(o, job, job.image, dir, images, sandbox) : undefined;
      // Open before the first job runs, so that an exec finds it as soon as the job is running.
      await sessions?.opened();
      if (prepared && 'outcome' in prepared) {
        log(`job ${job.jobId} could not start: ${prepared.message}`);
        return prepared;
      }
      try {
        result = await runJob({
          url: o.url,
          token: job.token,
          ...(job.start ? { spec: job.start } : {}),
          workdir: dir,
          // The CA goes to the job too, for the `berth` it may run against BERTH_URL.
          env: { BERTH_WORKER_ID: String(reg.workerId), ...(o.ca ? { [CA_ENV]: o.ca.file } : {}) },
          retryForMs: o.retryForMs,
          rank: o.rank,
          host: o.host,
          ...(reg.workerCredential
            ? {
                askNext: {
                  waitSeconds: FINISH_NEXT_WAIT_SECONDS,
                  credential: reg.workerCredential,
                  got: (n) => (handed = n),
                },
              }
            : {}),
          onSpawn: (p, running) => {
            pid = p;
            sessions?.ran({ running, ...(identity ? { identity } : {}) });
          },
          onTerminal: (t) => sessions?.terminal(t),
          ...(sandbox ? { sandbox: { ...sandbox, workdir: dir } } : {}),
          ...(prepared ? { image: prepared.image } : {}),
          // Under its own uid, every process the job left (setsid, nohup) ends with it: the
          // pilot's next job meets none of them.
          ...(identity ? { identity } : {}),
          amend: async (r) => {
            // Slurm signals every process of its job at once (scancel, its time limit): the job
            // may die of it a moment before this agent's own handler has run. Wait for that.
            if (r.signal !== null && !stoppedBy) await until(() => stoppedBy !== undefined, SIGNAL_SPREAD_MS);
            return stoppedBy && r.exitCode !== 0
              ? {
                  ...r,
                  message: `worker lost: its agent was stopped by ${stoppedBy} (scancel, the worker's time limit, or its node shutting down)`,
                }
              : r;
          },
        });
      } finally {
        pid = undefined;
        sessions?.ended();
        await prepared?.release();
        if (!(await emptied(dir))) workdir = undefined;
      }
      log(
        `job ${job.jobId} ended: ${result.outcome}${result.exitCode === null ? '' : ` (exit code ${result.exitCode})`}`,
      );
      job = reg.workerCredential && !stoppedBy ? await nextJob(o, reg.workerCredential, log, handed) : null;
      if (job) log(`worker ${reg.workerId}: running job ${job.jobId}`);
    }
    return result!;
  } finally {
    sessions?.close();
    if (workdir) await removeBeneath(workdir);
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}

/** The sessions inside this agent's running job, carried over its channel to the server. */
function sessionsOver(
  o: RemoteAgentOptions,
  workerId: number,
  credential: string,
  log: (line: string) => void,
) {
  const rank = o.rank ?? 0;
  let member: RunningMember | undefined;
  let held: HeldTerminal | undefined;
  let channel: AgentChannel | undefined = undefined;
  const execs = new HostExecs((e) => channel?.send(e));
  channel = openChannel({
    url: o.url,
    workerId,
    rank,
    credential,
    ...(o.ca ? { ca: o.ca.certificates } : {}),
    log,
    onMessage: (m) =>
      execs.handle(
        m,
        (w, r) => (w === workerId && r === rank ? member : undefined),
        (w) => (w === workerId ? held : undefined),
      ),
  });
  let waited = false;
  return {
    /** Waits for the channel once, before the first job: a pilot's later jobs never wait for it. */
    opened: async () => {
      if (waited) return;
      waited = true;
      if (!(await channel.opened(CHANNEL_WAIT_MS)))
        log('no channel to the server yet: berth exec and attach reach this job once there is');
    },
    ran: (m: RunningMember) => (member = m),
    terminal: (t: HeldTerminal) => (held = t),
    /** The job has ended: its sessions end with it (what they ran ended with its uid's processes). */
    ended: () => {
      member = undefined;
      held = undefined;
      execs.killAll();
    },
    close: () => {
      execs.killAll();
      channel.close();
    },
  };
}
