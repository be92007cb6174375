/**
 * Scheduler benchmark: the pure scheduler alone, no store, no HTTP.
 *
 * (a) plain: 100,000 queued workloads across 1,000 projects and 50 cluster queues (each project
 *     bound to one queue, as in berth); jobs finish and the scheduler admits the next ones until
 *     all have been admitted. Figures: admissions/s (scheduling passes plus the releases that
 *     make room) and heap bytes per queued workload.
 * (b) cohort: the same, with the 50 queues in 5 cohorts of 10 and an uneven load, so that about
 *     30 % of admissions borrow.
 * (c) steady state at 10k, 100k and 1M pending: jobs finish, new ones arrive, the scheduler
 *     admits; decisions/s must stay flat as the backlog grows.
 *
 * Heap is measured after a full GC. Run with `node --expose-gc --import tsx bench/scheduler.ts`;
 * without --expose-gc the file turns the flag on at run time (v8.setFlagsFromString) and takes
 * `gc` from a fresh context, which works the same on Node 20.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pathToFileURL } from 'node:url';
import { Scheduler, type QueueModel, type Workload } from '../src/scheduler/index.js';

type Figures = Record<string, number | string>;

function getGc(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed !== undefined) return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
const gc = getGc();

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Deterministic PRNG (mulberry32), so that every run schedules the same workloads. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const QUEUES = 50;
const PROJECTS = 1000;
const GIB = 2 ** 30;

function queue(name: string, cohort: string | null, cpu: number): QueueModel {
  return {
    name,
    cohort,
    nominal: { cpu: cpu * 1000, memory: cpu * 4 * GIB, jobs: 4 * cpu },
    borrowingLimit: {},
    lendingLimit: {},
    queueingStrategy: 'BestEffortFIFO',
    preemption: { withinClusterQueue: 'Never', reclaimWithinCohort: 'Never' },
    stopPolicy: 'None',
  };
}

/** Workload generator: project p is bound to queue `queueOf(p)`. */
function workloads(n: number, firstId: number, rnd: () => number, queueOf: (p: number) => number): Workload[] {
  const out: Workload[] = [];
  for (let k = 0; k < n; k++) {
    const id = firstId + k;
    const p = Math.floor(rnd() * PROJECTS);
    const cpu = 1 + Math.floor(rnd() * 4);
    out.push({
      id,
      queue: `q${queueOf(p)}`,
      project: `p${p}`,
      priority: rnd() < 0.1 ? 1 : 0,
      createdAt: id,
      requests: { cpu: cpu * 1000, memory: cpu * 2 * GIB, jobs: 1 },
    });
  }
  return out;
}

interface DrainResult {
  seconds: number;
  admissions: number;
  borrowing: number;
  passes: number;
}

/**
 * Admits everything: each pass admits what fits, then the older half of what runs finishes.
 * The clock is the pass number.
 */
function drainAll(s: Scheduler, total: number): DrainResult {
  let running: number[] = [];
  let admissions = 0;
  let borrowing = 0;
  let passes = 0;
  const t0 = performance.now();
  while (admissions < total) {
    const decisions = s.schedule(++passes);
    for (const d of decisions) {
      if (d.kind !== 'admit') continue;
      admissions++;
      if (Object.keys(d.borrowed).length > 0) borrowing++;
      running.push(d.id);
    }
    const done = running.length === 0 ? 0 : Math.max(1, running.length >> 1);
    for (let i = 0; i < done; i++) s.release(running[i] as number);
    running = running.slice(done);
    if (passes > 10 * total) throw new Error('no progress');
  }
  return { seconds: (performance.now() - t0) / 1000, admissions, borrowing, passes };
}

function plain(n = 100_000): Figures {
  const rnd = random(1);
  const ws = workloads(n, 1, rnd, (p) => p % QUEUES);
  const before = heapUsed();
  const s = new Scheduler();
  for (let q = 0; q < QUEUES; q++) s.upsertQueue(queue(`q${q}`, null, 64));
  for (const w of ws) s.enqueue(w);
  const after = heapUsed();
  const withoutWorkloads = before;
  ws.length = 0;
  const r = drainAll(s, n);
  return {
    'plain.workloads': n,
    'plain.admissionsPerSecond': Math.round(r.admissions / r.seconds),
    'plain.seconds': round(r.seconds, 3),
    'plain.passes': r.passes,
    // Scheduler only: the workload objects existed before and are not counted.
    'plain.heapBytesPerQueued': Math.round((after - withoutWorkloads) / n),
  };
}

function plainWithWorkloads(n = 100_000): Figures {
  const rnd = random(1);
  const before = heapUsed();
  const s = new Scheduler();
  for (let q = 0; q < QUEUES; q++) s.upsertQueue(queue(`q${q}`, null, 64));
  for (const w of workloads(n, 1, rnd, (p) => p % QUEUES)) s.enqueue(w);
  const after = heapUsed();
  const figures = { 'plain.heapBytesPerQueuedInclWorkload': Math.round((after - before) / n) };
  s.pendingIds('q0', 0, 1); // keep `s` alive until measured
  return figures;
}

function cohorts(n = 100_000): Figures {
  const rnd = random(2);
  // Uneven load: in each cohort of 10 queues, the first 3 get most projects and borrow from the rest.
  const busy = (p: number): number => {
    const cohort = p % 5;
    const member = p % 10 < 8 ? p % 3 : 3 + (p % 7);
    return cohort * 10 + member;
  };
  const ws = workloads(n, 1, rnd, busy);
  const s = new Scheduler();
  for (let q = 0; q < QUEUES; q++) s.upsertQueue(queue(`q${q}`, `c${Math.floor(q / 10)}`, 64));
  for (const w of ws) s.enqueue(w);
  ws.length = 0;
  const r = drainAll(s, n);
  return {
    'cohort.workloads': n,
    'cohort.admissionsPerSecond': Math.round(r.admissions / r.seconds),
    'cohort.borrowingShare': round(r.borrowing / r.admissions, 3),
    'cohort.seconds': round(r.seconds, 3),
  };
}

/** Steady state: `pending` queued; each step 500 running jobs finish and 500 new ones arrive. */
export function steady(pending: number, steps = 200, batch = 500): Figures {
  const rnd = random(3);
  const s = new Scheduler();
  for (let q = 0; q < QUEUES; q++) s.upsertQueue(queue(`q${q}`, null, 64));
  let nextId = 1;
  const setup0 = performance.now();
  for (const w of workloads(pending, nextId, rnd, (p) => p % QUEUES)) s.enqueue(w);
  nextId += pending;
  const setupSeconds = (performance.now() - setup0) / 1000;
  const running: number[] = [];
  for (const d of s.schedule(0)) if (d.kind === 'admit') running.push(d.id);
  let decisions = 0;
  let scheduleMs = 0;
  let totalMs = 0;
  let head = 0;
  for (let step = 1; step <= steps; step++) {
    const t0 = performance.now();
    const done = Math.min(batch, running.length - head);
    for (let i = 0; i < done; i++) s.release(running[head++] as number);
    for (const w of workloads(done, nextId, rnd, (p) => p % QUEUES)) s.enqueue(w);
    nextId += done;
    const t1 = performance.now();
    const ds = s.schedule(step);
    const t2 = performance.now();
    for (const d of ds) if (d.kind === 'admit') running.push(d.id);
    decisions += ds.length;
    scheduleMs += t2 - t1;
    totalMs += t2 - t0;
  }
  const label = pending >= 1_000_000 ? `${pending / 1_000_000}M` : `${pending / 1000}k`;
  return {
    [`steady.${label}.decisionsPerSecond`]: Math.round(decisions / (scheduleMs / 1000)),
    [`steady.${label}.withReleaseAndEnqueuePerSecond`]: Math.round(decisions / (totalMs / 1000)),
    [`steady.${label}.setupEnqueuePerSecond`]: Math.round(pending / setupSeconds),
  };
}

const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits;

export async function runSchedulerBench(): Promise<Record<string, number | string>> {
  const figures: Figures = { node: process.version };
  Object.assign(figures, plain());
  Object.assign(figures, plainWithWorkloads());
  Object.assign(figures, cohorts());
  for (const n of [10_000, 100_000, 1_000_000]) Object.assign(figures, steady(n));
  return figures;
}

if (false) {
  const figures = await runSchedulerBench();
  const width = Math.max(...Object.keys(figures).map((k) => k.length));
  for (const [k, v] of Object.entries(figures)) {
    console.log(`${k.padEnd(width)}  ${typeof v === 'number' ? v.toLocaleString('en-US') : v}`);
  }
}
export function runSteadyForProfile(): void {
  console.log(steady(Number(process.env.N ?? 1_000_000), Number(process.env.STEPS ?? 400)));
}
export function counters(): void {
  const C = (globalThis as unknown as { C: Record<string, number> }).C;
  for (const k of Object.keys(C)) C[k] = 0;

  const r = steady(Number(process.env.N ?? 1_000_000), Number(process.env.STEPS ?? 400));
  console.log(r, C);
}
