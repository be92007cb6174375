/**
 * The `simulated` factory: a test and planning aid, not a way to run work. A worker "runs" its
 * job without starting any process, for as long as the job's command declares:
 *
 * - `["sleep", "<seconds>"]` (decimals allowed, e.g. `0.2`) runs that long, then exits 0;
 * - any other command exits 0 at once.
 *
 * Each worker goes through the same agent protocol as a real agent — start, heartbeats (long
 * polls that answer early when the job must stop), finish — but in-process, through the
 * controller's AgentPort instead of HTTP, so the whole pipeline (admission, preemption, cancel,
 * cleanup) behaves as it would with real workers, at a cost of microseconds per job. It lets
 * benchmarks and scenario drivers (bench/pipeline.ts, Kueue's scheduler performance scenario in
 * bench/kueue.ts) push thousands of jobs through a real server.
 *
 * A cancelled or preempted run stops at once, reporting `cancelled`; a run longer than the job's
 * timeout ends at the timeout, reporting `timeout`. Nothing survives the server: after a restart
 * a simulated worker is simply gone (destroy succeeds), as a local worker's process would be.
 */
import type { FinishRequest, StartResponse } from '../agent/protocol.js';
import type { AgentPort, Factory, FactoryListener, WorkerHandle, WorkerRequest } from './factory.js';

export interface SimulatedFactoryOptions {
  name: string;
  capacity: number;
  listener: FactoryListener;
  agent: AgentPort;
  /** The clock runs are measured against (wall time). */
  now?: () => number;
}

/** How long a command "runs", in milliseconds: `sleep N` → N seconds, anything else → 0. */
export function simulatedMillis(command: readonly string[]): number {
  const [file, arg, ...rest] = command;
  const isSleep = file === 'sleep' || (file?.endsWith('/sleep') ?? false);
  if (!isSleep || arg === undefined || rest.length > 0 || !/^\d+(\.\d+)?$/.test(arg)) return 0;
  return Math.ceil(Number(arg) * 1000);
}

export class SimulatedFactory implements Factory {
  readonly kind = 'simulated';
  readonly inProcess = true;
  readonly name: string;
  readonly capacity: number;
  /** Workers created and not destroyed. */
  private readonly live = new Set<number>();
  private readonly now: () => number;
  private closing = false;

  constructor(private readonly opts: SimulatedFactoryOptions) {
    this.name = opts.name;
    this.capacity = opts.capacity;
    this.now = opts.now ?? Date.now;
  }

  create(req: WorkerRequest): Promise<WorkerHandle> {
    this.live.add(req.workerId);
    // The agents start after the controller has its handle, as real ones would: one per member.
    setImmediate(() => {
      for (let rank = 0; rank < req.members; rank++) void this.run(req.workerId, req.jobId, rank);
    });
    return Promise.resolve({ simulated: true });
  }

  destroy(workerId: number): Promise<void> {
    // A run still going notices at its next heartbeat and reports nothing more.
    this.live.delete(workerId);
    return Promise.resolve();
  }

  close(): Promise<void> {
    // Like a local agent host going away with the server: runs end without reporting.
    this.closing = true;
    this.live.clear();
    return Promise.resolve();
  }

  private alive(workerId: number): boolean {
    return !this.closing && this.live.has(workerId);
  }

  private async run(workerId: number, jobId: number, rank: number): Promise<void> {
    if (!this.alive(workerId)) return;
    try {
      let spec: StartResponse | null = null;
      // A gang's member waits for the others (the controller's rendezvous), as a real agent does.
      while (!spec && this.alive(workerId))
        spec = await this.opts.agent.agentStart(jobId, { rank, host: `sim-${workerId}-${rank}` }, 1000);
      if (!spec) return;
      const result = await this.simulate(workerId, spec);
      if (result && this.alive(workerId)) await this.opts.agent.agentFinish(jobId, result, rank);
    } catch (e) {
      // The controller refused (e.g. the job is being stopped before it started): the worker
      // ends without an outcome, exactly what a real agent's failure reports.
      if (this.alive(workerId))
        this.opts.listener.workerLost(
          workerId,
          `agent failed: ${e instanceof Error ? e.message : String(e)}`,
        );
    }
  }

  /** Waits out the declared duration in heartbeat long polls; undefined if the worker went away. */
  private async simulate(workerId: number, spec: StartResponse): Promise<FinishRequest | undefined> {
    const declared = simulatedMillis(spec.command);
    const limit = spec.timeoutSeconds === null ? Infinity : spec.timeoutSeconds * 1000;
    const end = this.now() + Math.min(declared, limit);
    // Three beats per heartbeat deadline, like a real agent (agent/run-job.ts), but not rounded
    // to whole seconds: even with heartbeatSeconds 1 the deadline never declares it lost.
    const beat = (spec.heartbeatSeconds * 1000) / 3;
    for (let left = end - this.now(); left > 0; left = end - this.now()) {
      const r = await this.opts.agent.agentHeartbeat(spec.jobId, Math.min(left, beat), spec.rank);
      if (!this.alive(workerId)) return undefined;
      if (r.cancel) {
        return { outcome: 'cancelled', exitCode: 143, signal: 'SIGTERM', message: r.reason ?? 'cancelled' };
      }
    }
    if (declared > limit)
      return {
        outcome: 'timeout',
        exitCode: 143,
        signal: 'SIGTERM',
        message: `timed out after ${spec.timeoutSeconds}s`,
      };
    return { outcome: 'exited', exitCode: 0, signal: null };
  }
}
