/**
 * `berth agent`: the agent of one worker on any machine that reaches the server over HTTP (a Slurm
 * job's, for one). It starts with a one-time credential (BERTH_AGENT_CREDENTIAL, never on the
 * command line, where `ps` shows it), registers its worker, which spends the credential and
 * hands it the job's token, runs the job as the local factory's agents do (run-job.ts), and exits.
 * Its working directory is its own and removed at the end; stopped by a signal (scancel), it stops
 * the job's processes first. Nothing it holds outlives the worker.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentHttpError } from './client.js';
import { killGroup } from './process-group.js';
import type { FinishRequest } from './protocol.js';
import { runJob } from './run-job.js';

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
}

export interface Registration {
  workerId: number;
  jobId: number;
  token: string;
}

export const REGISTER_PATH = '/api/v1/agent/register';

/** How long a signalled agent may still try to report its job's end before it exits. */
const REPORT_AFTER_SIGNAL_MS = 3000;

/** Spends the credential: the job's token, or an AgentHttpError the agent cannot get past. */
export async function register(
  url: string,
  workerId: number,
  credential: string,
  retryForMs = 60_000,
): Promise<Registration> {
  const deadline = Date.now() + retryForMs;
  for (let attempt = 0; ; attempt++) {
    let res: Response | undefined;
    try {
      res = await fetch(url.replace(/\/$/, '') + REGISTER_PATH, {
        method: 'POST',
        headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ workerId }),
      });
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
    if (res && res.status < 500) {
      const body = (await res.json()) as Registration | { error: { message: string } };
      if ('error' in body)
        throw new AgentHttpError(res.status, `registering worker ${workerId}: ${body.error.message}`);
      return body;
    }
    if (Date.now() > deadline)
      throw new AgentHttpError(res?.status ?? 503, `registering worker ${workerId}: server unavailable`);
    await new Promise((r) => setTimeout(r, Math.min(2000, 50 * 2 ** attempt)));
  }
}

export async function runRemoteAgent(o: RemoteAgentOptions): Promise<FinishRequest> {
  const log = o.log ?? ((line: string) => process.stderr.write(`berth agent: ${line}\n`));
  const reg = await register(o.url, o.workerId, o.credential, o.retryForMs);
  log(`worker ${reg.workerId} registered: running job ${reg.jobId}`);
  const workdir = mkdtempSync(join(o.workRoot ?? tmpdir(), `berth-worker-${reg.workerId}-`));
  let pid: number | undefined;
  // Stopped from outside (scancel, Slurm's time limit, a node shutting down): the job's processes
  // get the signal too. They are stopped, and the outcome says the worker was lost, and why.
  let stoppedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping job ${reg.jobId}`);
    stoppedBy ??= signal;
    if (pid) killGroup(pid, 'SIGTERM');
    // A few seconds to report, not the client's minute of retries: a server that is gone (it is
    // what cancelled the worker after a restart) would keep Slurm waiting until its KillWait.
    setTimeout(() => {
      if (pid) killGroup(pid, 'SIGKILL');
      rmSync(workdir, { recursive: true, force: true });
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    }, REPORT_AFTER_SIGNAL_MS).unref();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    const result = await runJob({
      url: o.url,
      token: reg.token,
      workdir,
      env: { BERTH_WORKER_ID: String(reg.workerId) },
      retryForMs: o.retryForMs,
      onSpawn: (p) => (pid = p),
      amend: (r) =>
        stoppedBy && r.exitCode !== 0
          ? {
              ...r,
              message: `worker lost: its agent was stopped by ${stoppedBy} (scancel, the worker's time limit, or its node shutting down)`,
            }
          : r,
    });
    log(
      `job ${reg.jobId} ended: ${result.outcome}${result.exitCode === null ? '' : ` (exit code ${result.exitCode})`}`,
    );
    return result;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    rmSync(workdir, { recursive: true, force: true });
  }
}
