/**
 * A job's life cycle once it is tracked, as one pure transition: what the controller knows of a
 * job (its facts) and what happened to it (an event) give what becomes of it (a decision). The
 * controller carries decisions out — store writes, timers, the scheduler, the agent's stop signal
 * (controller/lifecycle.ts) — and decides nothing there; the rules are here, tested from tables
 * (test/domain/job-transitions.test.ts) as Kueue tests its controllers' transitions.
 */
import type { JobState } from './job-state.js';
import { mayRetry, type FailureKind, type RetriesUsed, type RetryPolicy } from './retry.js';

/**
 * Why a job with a worker is being stopped: cancelled, timed out (its agent did not enforce its
 * timeout: it fails), evicted (preempted or drained: it is requeued), or one of its gang's ranks
 * failed (the others are stopped).
 */
export type StopKind = 'cancel' | 'timeout' | 'preempt' | 'drain' | 'rank-failed';

/**
 * How a run ended, as its agent (or the controller, for a run that never started) reports it: the
 * agent protocol's `FinishRequest` (agent/protocol.ts), which the agent keeps free of the domain,
 * so the controller passes one where this is asked for (the compiler holds it to this shape).
 */
export type RunOutcome = 'exited' | 'timeout' | 'cancelled' | 'start-failed';

export interface RunReport {
  outcome: RunOutcome;
  /** Exit code; 128 + N for a process killed by signal N; null when it never started. */
  exitCode: number | null;
  signal: string | null;
  message?: string;
}

/** What a transition reads of an unfinished job: a slice of the controller's model of it. */
export interface JobFacts {
  state: JobState;
  /** It has a worker (made for it, or a pilot's it was handed): a run to stop or to end. */
  hasWorker: boolean;
  /** Its process was started by its agent. */
  started: boolean;
  stopping: StopKind | null;
  stopReason: string;
  cancelRequested: boolean;
  /** Its ending (its terminal state's write) has begun: nothing else happens to it. */
  ending: boolean;
  /** Attempts that ended before the current one. */
  attempts: number;
  timeoutSeconds: number | null;
  retryPolicy: RetryPolicy;
  retriesUsed: RetriesUsed;
}

export type JobEvent =
  /** A member asked to cancel it (the request itself is already recorded). */
  | { type: 'cancel'; by: string }
  /** The scheduler evicts it to its queue: preempted, or its queue drained. */
  | { type: 'evict'; kind: 'preempt' | 'drain'; reason: string }
  /** Its run must stop: its timeout passed unenforced, or a rank of its gang failed. */
  | { type: 'stop'; kind: StopKind; reason: string }
  /** Its run ended; `charge`: whose fault a failure is, which says which retry budget it draws on. */
  | { type: 'run-ended'; report: RunReport; charge: FailureKind }
  /**
   * It failed without a run's report (a resource its well keeps failing to make). `final`: a
   * failure no retry could change (an image the registry does not have): never retried.
   */
  | { type: 'failed'; reason: string; exitCode: number | null; charge: FailureKind; final?: boolean };

/** How a job leaves the scheduler when it ends before it ran: from its queue, or from admission. */
export type LeavesFrom = 'queue' | 'admission';

export type Decision =
  /** Nothing changes (told twice, or overtaken by what already happens to it). */
  | { do: 'ignore' }
  /** Its ending has begun already: wait for it, then answer. */
  | { do: 'await-ending' }
  /** Ends in a terminal state; `leaves`: where it is taken from first, if it ran no worker. */
  | { do: 'finish'; state: JobState; reason: string; exitCode: number | null; leaves?: LeavesFrom }
  /**
   * Its run is told to stop (through its agent's long poll) and it is marked `stopping`. `endNow`:
   * its worker exists but its agent never started it (a pending Slurm job): nobody is there to
   * tell, so its run ends at once, cancelled, with `reason`.
   */
  | { do: 'stop'; kind: StopKind; reason: string; endNow: boolean }
  /** Back to its queue at its old place, charged to nobody; what it held is destroyed. */
  | { do: 'requeue'; reason: string; stopping?: StopKind }
  /** Its attempt failed and its budget allows another: it is retried after its backoff. */
  | { do: 'retry'; failure: string; exitCode: number | null; charge: FailureKind }
  /** Its run ended: an outcome decided (`then`), after the steps every run's end takes. */
  | {
      do: 'end-run';
      /** The run ended on its own or by its timeout: it says how long such jobs take. */
      recordRuntime: boolean;
      /** An eviction it outran: the eviction is forgotten, its real outcome stands. */
      clearStopping: boolean;
      then: Extract<Decision, { do: 'finish' } | { do: 'retry' }>;
    };

const isEviction = (k: StopKind | null): boolean => k === 'preempt' || k === 'drain';

/** What becomes of a job `f` when `e` happens to it. */
export function decide(f: JobFacts, e: JobEvent): Decision {
  switch (e.type) {
    case 'cancel':
      return onCancel(f, `cancelled by ${e.by}`);
    case 'evict':
      // Holding no worker, nothing runs: back to its queue at once, stopping until it is there
      // (a worker or resource whose record is still being written for it is then destroyed).
      return f.hasWorker
        ? onStop(f, e.kind, e.reason)
        : { do: 'requeue', reason: e.reason, stopping: e.kind };
    case 'stop':
      return onStop(f, e.kind, e.reason);
    case 'run-ended':
      return onRunEnded(f, e.report, e.charge);
    case 'failed':
      return e.final
        ? { do: 'finish', state: 'failed', reason: e.reason, exitCode: e.exitCode }
        : onFailure(f, e.reason, e.exitCode, e.charge);
  }
}

function onCancel(f: JobFacts, reason: string): Decision {
  // Told twice (directly, and by the leader's own control message), or it ended on its own.
  if (f.ending) return { do: 'await-ending' };
  if (f.state === 'queued')
    return { do: 'finish', state: 'cancelled', reason, exitCode: null, leaves: 'queue' };
  if (!f.hasWorker) return { do: 'finish', state: 'cancelled', reason, exitCode: null, leaves: 'admission' };
  return onStop(f, 'cancel', reason);
}

function onStop(f: JobFacts, kind: StopKind, reason: string): Decision {
  // A cancel is final: no later stop takes its place (its outcome stays "cancelled").
  if (f.stopping === 'cancel') return { do: 'ignore' };
  // A gang's failed rank stops the others, unless they are being stopped already.
  if (kind === 'rank-failed' && f.stopping) return { do: 'ignore' };
  return { do: 'stop', kind, reason, endNow: f.state === 'admitted' && f.hasWorker };
}

function onRunEnded(f: JobFacts, r: RunReport, charge: FailureKind): Decision {
  if (f.ending) return { do: 'ignore' };
  const evicted = isEviction(f.stopping);
  // An evicted job goes back to its queue — unless it had already ended on its own before it
  // was stopped: then its real outcome stands (running it again would repeat finished work).
  if (evicted && r.outcome !== 'exited')
    // Its run ended once already (its agent's report and its stop racing): it is requeued.
    return f.hasWorker ? { do: 'requeue', reason: f.stopReason } : { do: 'ignore' };
  const stopping = evicted ? null : f.stopping;
  const [state, reason] = outcomeOf({ ...f, stopping }, r);
  return {
    do: 'end-run',
    recordRuntime: (r.outcome === 'exited' || r.outcome === 'timeout') && f.started && stopping === null,
    clearStopping: evicted,
    then:
      state === 'failed'
        ? onFailure(f, reason, r.exitCode, charge)
        : { do: 'finish', state, reason, exitCode: r.exitCode },
  };
}

/** A failed attempt: retried while the budget `charge` draws on lasts, unless a cancel was asked. */
function onFailure(
  f: JobFacts,
  reason: string,
  exitCode: number | null,
  charge: FailureKind,
): Extract<Decision, { do: 'finish' | 'retry' }> {
  if (f.cancelRequested || !mayRetry(f.retryPolicy, f.retriesUsed, charge)) {
    const ran = f.attempts > 0 ? ` (attempt ${f.attempts + 1})` : '';
    return { do: 'finish', state: 'failed', reason: `${reason}${ran}`, exitCode };
  }
  return { do: 'retry', failure: reason, exitCode, charge };
}

/** The state and reason a run's report gives a job that is not evicted. */
function outcomeOf(
  f: Pick<JobFacts, 'stopping' | 'stopReason' | 'timeoutSeconds'>,
  r: RunReport,
): [JobState, string] {
  // Its agent did not enforce its timeout, so the server stopped it: a failure, as a timeout is.
  if (f.stopping === 'timeout') return ['failed', f.stopReason];
  if (f.stopping === 'cancel' || r.outcome === 'cancelled')
    return ['cancelled', f.stopReason || r.message || 'cancelled'];
  if (r.outcome === 'timeout') return ['failed', r.message ?? `timed out after ${f.timeoutSeconds}s`];
  if (r.outcome === 'start-failed') return ['failed', r.message ?? 'could not start'];
  if (r.exitCode === 0) return ['succeeded', 'exited with code 0'];
  // The agent's own account comes first (e.g. "killed: out of memory (limit 64Mi)").
  if (r.message) return ['failed', r.message];
  return [
    'failed',
    r.signal ? `killed by ${r.signal} (exit code ${r.exitCode})` : `exited with code ${r.exitCode}`,
  ];
}
