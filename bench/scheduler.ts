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
 * Rates are given per second of wall-clock time and per second of this process's CPU time (the
 * latter holds up better on a busy machine). Heap is measured after a full GC: run with
 * `node --expose-gc --import tsx bench/scheduler.ts`; without --expose-gc the file turns the flag
 * on at run time (v8.setFlagsFromString) and takes `gc` from a fresh context, which works the
 * same on Node 20. `node --import tsx bench/scheduler.ts` is therefore enough.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pathToFileURL } from 'node:url';
import { Scheduler, type QueueModel, type Workload } from '../src/scheduler/index.js';
import { random } from './lib.js';

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
function workloads(
  n: number,
  firstId: number,
  rnd: () => number,
  queueOf: (p: number) => number,
): Workload[] {
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

/** Wall-clock and CPU time of a measured phase (CPU time holds up better on a busy machine). */
class Stopwatch {
  private wall = 0;
  private cpu = 0;
  private wall0 = 0;
  private cpu0: NodeJS.CpuUsage = { user: 0, system: 0 };

  start(): void {
    this.wall0 = performance.now();
    this.cpu0 = process.cpuUsage();
  }

  stop(): void {
    this.wall += performance.now() - this.wall0;
    const d = process.cpuUsage(this.cpu0);
    this.cpu += (d.user + d.system) / 1000;
  }

  /** Rates per second of wall-clock and of CPU time. */
  rates(count: number): { wall: number; cpu: number; seconds: number } {
    return {
      wall: Math.round(count / (this.wall / 1000)),
      cpu: Math.round(count / (this.cpu / 1000)),
      seconds: this.wall / 1000,
    };
  }
}

interface DrainResult {
  watch: Stopwatch;
  admissions: number;
  borrowing: number;
  passes: number;
}

/**
 * Admits everything: each pass admits what fits, then the older half of what runs finishes.
 * The clock is the pass number. Timed: the passes and the releases.
 */
function drainAll(s: Scheduler, total: number): DrainResult {
  let running: number[] = [];
  let admissions = 0;
  let borrowing = 0;
  let passes = 0;
  const watch = new Stopwatch();
  watch.start();
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
  watch.stop();
  return { watch, admissions, borrowing, passes };
}

function plainQueues(s: Scheduler): void {
  for (let q = 0; q < QUEUES; q++) s.upsertQueue(queue(`q${q}`, null, 64));
}

function plain(n = 100_000): Figures {
  let ws: Workload[] = workloads(n, 1, random(1), (p) => p % QUEUES);
  const s = new Scheduler();
  plainQueues(s);
  const before = heapUsed();
  for (const w of ws) s.enqueue(w);
  ws = []; // the scheduler keeps its own compact copy of each workload
  const after = heapUsed();
  const r = drainAll(s, n);
  const rates = r.watch.rates(r.admissions);
  return {
    'plain.workloads': n,
    'plain.admissionsPerSecond': rates.wall,
    'plain.admissionsPerCpuSecond': rates.cpu,
    'plain.seconds': round(rates.seconds, 3),
    'plain.heapBytesPerQueued': Math.round((after - before) / n),
  };
}

function cohorts(n = 100_000, busyShare = 0.4): Figures {
  // Uneven load: in each cohort of 10 queues, 3 busy queues get `busyShare` of the cohort's
  // projects and borrow what the other 7 leave unused.
  const place = random(4);
  const queueOfProject = Array.from({ length: PROJECTS }, (_, p) => {
    const member = place() < busyShare ? Math.floor(place() * 3) : 3 + Math.floor(place() * 7);
    return (p % 5) * 10 + member;
  });
  const ws = workloads(n, 1, random(2), (p) => queueOfProject[p] ?? 0);
  const s = new Scheduler();
  for (let q = 0; q < QUEUES; q++) s.upsertQueue(queue(`q${q}`, `c${Math.floor(q / 10)}`, 64));
  for (const w of ws) s.enqueue(w);
  ws.length = 0;
  const r = drainAll(s, n);
  const rates = r.watch.rates(r.admissions);
  return {
    'cohort.workloads': n,
    'cohort.admissionsPerSecond': rates.wall,
    'cohort.admissionsPerCpuSecond': rates.cpu,
    'cohort.borrowingShare': round(r.borrowing / r.admissions, 3),
    'cohort.seconds': round(rates.seconds, 3),
  };
}

/**
 * Steady state with `pending` queued: each step, 500 running jobs finish, 500 new ones arrive
 * and a pass admits about as many. After a warm-up, the passes are timed (decisions/s), and so
 * is the whole step with its releases and submissions.
 */
function steady(pending: number, steps = 600, warmup = 100, batch = 500): Figures {
  const rnd = random(3);
  const s = new Scheduler();
  plainQueues(s);
  let nextId = 1;
  const setup = new Stopwatch();
  const heap0 = heapUsed();
  setup.start();
  for (const w of workloads(pending, nextId, rnd, (p) => p % QUEUES)) s.enqueue(w);
  setup.stop();
  const heapPerPending = (heapUsed() - heap0) / pending;
  nextId += pending;
  const running: number[] = [];
  for (const d of s.schedule(0)) if (d.kind === 'admit') running.push(d.id);
  let decisions = 0;
  let head = 0;
  const passes = new Stopwatch();
  const whole = new Stopwatch();
  for (let step = 1; step <= warmup + steps; step++) {
    const measured = step > warmup;
    if (measured) whole.start();
    const done = Math.min(batch, running.length - head);
    for (let i = 0; i < done; i++) s.release(running[head++] as number);
    for (const w of workloads(done, nextId, rnd, (p) => p % QUEUES)) s.enqueue(w);
    nextId += done;
    if (measured) passes.start();
    const ds = s.schedule(step);
    if (measured) {
      passes.stop();
      whole.stop();
      decisions += ds.length;
    }
    for (const d of ds) if (d.kind === 'admit') running.push(d.id);
  }
  const label = pending >= 1_000_000 ? `${pending / 1_000_000}M` : `${pending / 1000}k`;
  const p = passes.rates(decisions);
  const w = whole.rates(decisions);
  return {
    [`steady.${label}.decisionsPerSecond`]: p.wall,
    [`steady.${label}.decisionsPerCpuSecond`]: p.cpu,
    [`steady.${label}.withReleaseAndSubmitPerSecond`]: w.wall,
    [`steady.${label}.enqueuePerSecond`]: setup.rates(pending).wall,
    [`steady.${label}.heapBytesPerPending`]: Math.round(heapPerPending),
  };
}

const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits;

export async function runSchedulerBench(): Promise<Record<string, number | string>> {
  const figures: Figures = { node: process.version };
  Object.assign(figures, plain());
  Object.assign(figures, cohorts());
  for (const n of [10_000, 100_000, 1_000_000]) Object.assign(figures, steady(n));
  return figures;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await runSchedulerBench();
  const width = Math.max(...Object.keys(figures).map((k) => k.length));
  for (const [k, v] of Object.entries(figures)) {
    console.log(`${k.padEnd(width)}  ${typeof v === 'number' ? v.toLocaleString('en-US') : v}`);
  }
}
