/**
 * A job's life cycle as a pure transition (domain/job-transitions.ts), tested from tables as
 * Kueue tests its controllers: a job's facts and an event in, the decision out. What the
 * controller does with a decision (its writes, the agent's stop signal) is tested through a
 * running server (test/jobs/); the rules themselves are here, each row a case users rely on.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decide, type Decision, type JobEvent, type JobFacts } from '../../src/domain/job-transitions.js';

/** A running job with a worker, nothing asked of it, no retries. */
const running: JobFacts = {
  state: 'running',
  hasWorker: true,
  started: true,
  stopping: null,
  stopReason: '',
  cancelRequested: false,
  ending: false,
  attempts: 0,
  timeoutSeconds: 60,
  retryPolicy: { retries: 0, infraRetries: 0, backoffSeconds: 10 },
  retriesUsed: { job: 0, infrastructure: 0 },
};
const queued: JobFacts = { ...running, state: 'queued', hasWorker: false, started: false };
/** Admitted, waiting for its worker (none made yet). */
const admitted: JobFacts = { ...running, state: 'admitted', hasWorker: false, started: false };
/** Admitted with a worker whose agent has not started it (a pending Slurm job). */
const pending: JobFacts = { ...running, state: 'admitted', hasWorker: true, started: false };
const withRetries: JobFacts = {
  ...running,
  retryPolicy: { retries: 2, infraRetries: 1, backoffSeconds: 10 },
};

const exited = (
  code: number,
  extra: Partial<Extract<JobEvent, { type: 'run-ended' }>['report']> = {},
): JobEvent => ({
  type: 'run-ended',
  report: { outcome: 'exited', exitCode: code, signal: null, ...extra },
  charge: 'job',
});
const ended = (outcome: 'timeout' | 'cancelled' | 'start-failed', message?: string): JobEvent => ({
  type: 'run-ended',
  report: { outcome, exitCode: null, signal: null, ...(message ? { message } : {}) },
  charge: outcome === 'start-failed' ? 'infrastructure' : 'job',
});
const finish = (state: string, reason: string, exitCode: number | null = null) =>
  ({ do: 'finish', state, reason, exitCode }) as Decision;
const endRun = (then: Decision, recordRuntime = true, clearStopping = false): Decision =>
  ({ do: 'end-run', recordRuntime, clearStopping, then }) as Decision;

interface Row {
  name: string;
  facts: JobFacts;
  event: JobEvent;
  want: Decision;
}

const cancels: Row[] = [
  {
    name: 'a queued job leaves its queue, cancelled',
    facts: queued,
    event: { type: 'cancel', by: 'ann' },
    want: { do: 'finish', state: 'cancelled', reason: 'cancelled by ann', exitCode: null, leaves: 'queue' },
  },
  {
    name: 'an admitted job without a worker gives its admission back, cancelled',
    facts: admitted,
    event: { type: 'cancel', by: 'ann' },
    want: {
      do: 'finish',
      state: 'cancelled',
      reason: 'cancelled by ann',
      exitCode: null,
      leaves: 'admission',
    },
  },
  {
    name: 'a running job is told to stop',
    facts: running,
    event: { type: 'cancel', by: 'ann' },
    want: { do: 'stop', kind: 'cancel', reason: 'cancelled by ann', endNow: false },
  },
  {
    name: 'a job whose agent never started ends at once (nobody to tell)',
    facts: pending,
    event: { type: 'cancel', by: 'ann' },
    want: { do: 'stop', kind: 'cancel', reason: 'cancelled by ann', endNow: true },
  },
  {
    name: 'a job already ending: told twice, the first ending answers',
    facts: { ...running, ending: true },
    event: { type: 'cancel', by: 'ann' },
    want: { do: 'await-ending' },
  },
  {
    name: 'a job being cancelled is not cancelled twice',
    facts: { ...running, stopping: 'cancel', stopReason: 'cancelled by bob' },
    event: { type: 'cancel', by: 'ann' },
    want: { do: 'ignore' },
  },
  {
    name: 'a cancel overrides a preemption under way',
    facts: { ...running, stopping: 'preempt', stopReason: 'preempted' },
    event: { type: 'cancel', by: 'ann' },
    want: { do: 'stop', kind: 'cancel', reason: 'cancelled by ann', endNow: false },
  },
];

const stops: Row[] = [
  {
    name: 'an unenforced timeout stops the run',
    facts: running,
    event: { type: 'stop', kind: 'timeout', reason: 'timed out after 60s' },
    want: { do: 'stop', kind: 'timeout', reason: 'timed out after 60s', endNow: false },
  },
  {
    name: "a gang's failed rank stops the others",
    facts: running,
    event: { type: 'stop', kind: 'rank-failed', reason: 'rank 2 exited with code 1' },
    want: { do: 'stop', kind: 'rank-failed', reason: 'rank 2 exited with code 1', endNow: false },
  },
  {
    name: 'a second failed rank changes nothing',
    facts: { ...running, stopping: 'rank-failed', stopReason: 'rank 2 exited with code 1' },
    event: { type: 'stop', kind: 'rank-failed', reason: 'rank 3 exited with code 1' },
    want: { do: 'ignore' },
  },
  {
    name: 'a failed rank does not turn a preemption into a failure',
    facts: { ...running, stopping: 'preempt', stopReason: 'preempted' },
    event: { type: 'stop', kind: 'rank-failed', reason: 'rank 1 killed by SIGTERM' },
    want: { do: 'ignore' },
  },
  {
    name: 'nothing replaces a cancel',
    facts: { ...running, stopping: 'cancel', stopReason: 'cancelled by ann' },
    event: { type: 'stop', kind: 'timeout', reason: 'timed out after 60s' },
    want: { do: 'ignore' },
  },
];

const evictions: Row[] = [
  {
    name: 'preempted before it has a worker: straight back to its queue, stopping until it is there',
    facts: admitted,
    event: { type: 'evict', kind: 'preempt', reason: 'preempted by job 9' },
    want: { do: 'requeue', reason: 'preempted by job 9', stopping: 'preempt' },
  },
  {
    name: 'drained while running: its run is stopped',
    facts: running,
    event: { type: 'evict', kind: 'drain', reason: 'queue q is draining' },
    want: { do: 'stop', kind: 'drain', reason: 'queue q is draining', endNow: false },
  },
  {
    name: 'preempted while being cancelled: the cancel stands',
    facts: { ...running, stopping: 'cancel', stopReason: 'cancelled by ann' },
    event: { type: 'evict', kind: 'preempt', reason: 'preempted by job 9' },
    want: { do: 'ignore' },
  },
];

const runEnds: Row[] = [
  {
    name: 'exit 0 succeeds, and teaches how long such jobs take',
    facts: running,
    event: exited(0),
    want: endRun(finish('succeeded', 'exited with code 0', 0)),
  },
  {
    name: 'a non-zero exit fails, saying the code',
    facts: running,
    event: exited(3),
    want: endRun(finish('failed', 'exited with code 3', 3)),
  },
  {
    name: 'killed by a signal says which',
    facts: running,
    event: exited(137, { signal: 'SIGKILL' }),
    want: endRun(finish('failed', 'killed by SIGKILL (exit code 137)', 137)),
  },
  {
    name: "the agent's own account comes first",
    facts: running,
    event: exited(137, { signal: 'SIGKILL', message: 'killed: out of memory (limit 64Mi)' }),
    want: endRun(finish('failed', 'killed: out of memory (limit 64Mi)', 137)),
  },
  {
    name: 'its own timeout fails it',
    facts: running,
    event: ended('timeout'),
    want: endRun(finish('failed', 'timed out after 60s')),
  },
  {
    name: 'stopped by the server for its timeout: failed with the server’s reason, no runtime learned',
    facts: { ...running, stopping: 'timeout', stopReason: 'timed out after 60s (stopped by the server)' },
    event: exited(143, { signal: 'SIGTERM' }),
    want: endRun(finish('failed', 'timed out after 60s (stopped by the server)', 143), false),
  },
  {
    name: 'a cancelled run ends cancelled with the cancel’s reason',
    facts: { ...running, stopping: 'cancel', stopReason: 'cancelled by ann', cancelRequested: true },
    event: exited(143, { signal: 'SIGTERM' }),
    want: endRun(finish('cancelled', 'cancelled by ann', 143), false),
  },
  {
    name: 'a worker that could not start fails it, charged to the infrastructure',
    facts: pending,
    event: ended('start-failed', 'sbatch: error: invalid partition'),
    want: endRun(finish('failed', 'sbatch: error: invalid partition'), false),
  },
  {
    name: 'a preempted run goes back to its queue with the eviction’s reason',
    facts: { ...running, stopping: 'preempt', stopReason: 'preempted by job 9' },
    event: exited(143, { outcome: 'cancelled', signal: 'SIGTERM' }),
    want: { do: 'requeue', reason: 'preempted by job 9' },
  },
  {
    name: 'a run that ended on its own before its eviction keeps its outcome',
    facts: { ...running, stopping: 'drain', stopReason: 'queue q is draining' },
    event: exited(0),
    want: endRun(finish('succeeded', 'exited with code 0', 0), true, true),
  },
  {
    name: 'an evicted run reported twice is requeued once',
    facts: { ...running, hasWorker: false, stopping: 'preempt', stopReason: 'preempted' },
    event: ended('cancelled'),
    want: { do: 'ignore' },
  },
  {
    name: 'a run that ends while its job is ending changes nothing',
    facts: { ...running, ending: true },
    event: exited(0),
    want: { do: 'ignore' },
  },
];

const retries: Row[] = [
  {
    name: 'a failure with budget left is retried',
    facts: withRetries,
    event: exited(1),
    want: endRun({ do: 'retry', failure: 'exited with code 1', exitCode: 1, charge: 'job' }),
  },
  {
    name: 'a lost worker draws on the infrastructure’s budget',
    facts: withRetries,
    event: ended('start-failed', 'worker lost: node down'),
    want: endRun(
      { do: 'retry', failure: 'worker lost: node down', exitCode: null, charge: 'infrastructure' },
      false,
    ),
  },
  {
    name: 'a spent budget ends it failed, naming the attempt',
    facts: { ...withRetries, attempts: 2, retriesUsed: { job: 2, infrastructure: 0 } },
    event: exited(1),
    want: endRun(finish('failed', 'exited with code 1 (attempt 3)', 1)),
  },
  {
    name: 'the other budget being spent does not matter',
    facts: { ...withRetries, attempts: 1, retriesUsed: { job: 0, infrastructure: 1 } },
    event: exited(1),
    want: endRun({ do: 'retry', failure: 'exited with code 1', exitCode: 1, charge: 'job' }),
  },
  {
    name: 'a job whose cancel was asked is never retried',
    facts: { ...withRetries, cancelRequested: true },
    event: exited(1),
    want: endRun(finish('failed', 'exited with code 1', 1)),
  },
  {
    name: 'a resource that cannot be made fails an admitted job, or retries it',
    facts: { ...admitted, retryPolicy: withRetries.retryPolicy },
    event: {
      type: 'failed',
      reason: 'cannot create resource db: refused',
      exitCode: null,
      charge: 'infrastructure',
    },
    want: {
      do: 'retry',
      failure: 'cannot create resource db: refused',
      exitCode: null,
      charge: 'infrastructure',
    },
  },
  {
    name: '… and with no budget it fails',
    facts: admitted,
    event: {
      type: 'failed',
      reason: 'cannot create resource db: refused',
      exitCode: null,
      charge: 'infrastructure',
    },
    want: finish('failed', 'cannot create resource db: refused'),
  },
  {
    name: 'a failure no retry could change (an image the registry lacks) fails it, whatever its budget',
    facts: { ...admitted, retryPolicy: withRetries.retryPolicy },
    event: {
      type: 'failed',
      reason: 'image 127.0.0.1:5000/x:1: manifest unknown',
      exitCode: null,
      charge: 'job',
      final: true,
    },
    want: finish('failed', 'image 127.0.0.1:5000/x:1: manifest unknown'),
  },
];

for (const [title, rows] of Object.entries({ cancels, stops, evictions, runEnds, retries }))
  describe(`job transitions: ${title}`, () => {
    for (const row of rows) it(row.name, () => assert.deepEqual(decide(row.facts, row.event), row.want));
  });

describe('job transitions: properties', () => {
  const stopKind = fc.constantFrom(null, 'cancel', 'timeout', 'preempt', 'drain', 'rank-failed' as const);
  const facts = fc.record<JobFacts>({
    state: fc.constantFrom('queued', 'admitted', 'running' as const),
    hasWorker: fc.boolean(),
    started: fc.boolean(),
    stopping: stopKind,
    stopReason: fc.constantFrom('', 'stopped'),
    cancelRequested: fc.boolean(),
    ending: fc.boolean(),
    attempts: fc.nat(5),
    timeoutSeconds: fc.constantFrom(null, 60),
    retryPolicy: fc.record({ retries: fc.nat(3), infraRetries: fc.nat(3), backoffSeconds: fc.constant(10) }),
    retriesUsed: fc.record({ job: fc.nat(3), infrastructure: fc.nat(3) }),
  });
  const report = fc.record({
    outcome: fc.constantFrom('exited', 'timeout', 'cancelled', 'start-failed' as const),
    exitCode: fc.constantFrom(null, 0, 1, 137),
    signal: fc.constantFrom(null, 'SIGKILL'),
  });

  it('never retries a job whose cancel was asked, nor beyond its budget', () => {
    fc.assert(
      fc.property(facts, report, fc.constantFrom('job', 'infrastructure' as const), (f, r, charge) => {
        const d = decide(f, { type: 'run-ended', report: r, charge });
        const then = d.do === 'end-run' ? d.then : d;
        if (then.do !== 'retry') return;
        assert.equal(f.cancelRequested, false);
        const budget = charge === 'job' ? f.retryPolicy.retries : f.retryPolicy.infraRetries;
        assert.ok(f.retriesUsed[charge] < budget);
      }),
    );
  });

  it('never moves a job whose ending has begun, and never un-cancels one', () => {
    fc.assert(
      fc.property(facts, report, (f, r) => {
        const d = decide(f, { type: 'run-ended', report: r, charge: 'job' });
        if (f.ending) assert.deepEqual(d, { do: 'ignore' });
        // A run stopped by a cancel ends cancelled, whatever its agent says.
        if (f.stopping === 'cancel' && !f.ending && d.do === 'end-run')
          assert.equal(d.then.do === 'finish' && d.then.state, 'cancelled');
      }),
    );
  });

  it('requeues only an evicted job, and an evicted job is never retried nor failed by its stop', () => {
    fc.assert(
      fc.property(facts, report, (f, r) => {
        const d = decide(f, { type: 'run-ended', report: r, charge: 'job' });
        const evicted = f.stopping === 'preempt' || f.stopping === 'drain';
        if (d.do === 'requeue') assert.ok(evicted);
        if (evicted && r.outcome !== 'exited') assert.ok(d.do === 'requeue' || d.do === 'ignore');
      }),
    );
  });
});
