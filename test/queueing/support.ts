/**
 * Shared set-up for the end-to-end queueing scenarios: a real server whose local factory has room
 * for eight jobs and stops them quickly, queues and projects through the API, jobs that block on a
 * gate file the test creates, and the quota actually held over time, rebuilt from the timelines.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, afterEach, before } from 'node:test';
import { call, localFactoryConfig, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';
import { hostPids } from '../helpers/processes.js';

export interface Job {
  id: number;
  project: string;
  state: string;
  reason: string;
  exitCode: number | null;
  position: number | null;
  clusterQueue: string;
  priority: number;
  requests: Record<string, string>;
  borrowed: Record<string, string> | null;
  attempts: number;
  createdAt: string;
  admittedAt: string | null;
  cleanedUp: boolean;
}

export interface Event {
  id: number;
  at: string;
  type: string;
  message: string;
}

export interface Worker {
  id: number;
  jobId: number;
  state: string;
}

export interface BlockingOptions {
  cpu?: number;
  priority?: number;
  term?: 'record' | 'ignore';
}

export interface QueueView {
  name: string;
  estimates?: string;
  usage: Record<string, string>;
  borrowed: Record<string, string>;
  pending: number;
  admitted: number;
}

const TERMINAL = ['succeeded', 'failed', 'cancelled'];

export class Env {
  private readonly gates: Gate[] = [];
  /** Each pid file's process as the host numbers it (see `pids`). */
  private readonly hostPid = new Map<string, number>();
  private barrierReady = false;
  private started: { s: TestServer; dir: string } | undefined;

  /** `capacity`: how many jobs the local factory runs at once. */
  private constructor(private readonly capacity: number) {}

  /**
   * The environment of one test file: the server starts before its tests, every gate is opened
   * after each test, and the server is closed after them all.
   */
  static use(capacity = 8): Env {
    const env = new Env(capacity);
    before(() => env.start());
    afterEach(() => env.openGates());
    after(() => env.close());
    return env;
  }

  get s(): TestServer {
    return this.current().s;
  }

  get dir(): string {
    return this.current().dir;
  }

  private current(): { s: TestServer; dir: string } {
    if (!this.started) throw new Error('the queueing environment has not started (Env.use registers it)');
    return this.started;
  }

  private async start(): Promise<void> {
    const s = await startTestServer({ config: localFactoryConfig(this.capacity) });
    this.started = { s, dir: scratchDir('berth-queueing-') };
  }

  private async close(): Promise<void> {
    if (!this.started) return;
    await this.started.s.close();
    rmSync(this.started.dir, { recursive: true, force: true });
  }

  async req<T>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T; text: string }> {
    return call<T>(this.s.api, this.s.adminToken, method, path, body);
  }

  /** A cluster queue, and a project of the same name bound to it. */
  async queue(body: Record<string, unknown> & { name: string }, projects = [body.name]): Promise<void> {
    const q = await this.req('POST', '/cluster-queues', body);
    assert.equal(q.status, 201, q.text);
    for (const name of projects) {
      const p = await this.req('POST', '/projects', { name, clusterQueue: body.name });
      assert.equal(p.status, 201, p.text);
    }
  }

  async patchQueue(name: string, body: Record<string, unknown>): Promise<void> {
    const r = await this.req('PATCH', `/cluster-queues/${name}`, body);
    assert.equal(r.status, 200, r.text);
  }

  /** The value of one sample of GET /metrics, `name{labels}` as it is written there (0 when absent). */
  async metric(sample: string): Promise<number> {
    const r = await this.req<string>('GET', '/metrics');
    assert.equal(r.status, 200, r.text);
    const line = r.text.split('\n').find((l) => l.startsWith(`${sample} `));
    return line === undefined ? 0 : Number(line.slice(sample.length + 1));
  }

  async queueView(name: string): Promise<QueueView> {
    return (await this.req<QueueView>('GET', `/cluster-queues/${name}`)).body;
  }

  /** A file-backed gate: jobs wait for it to exist. */
  gate(name: string): Gate {
    const g = new Gate(join(this.dir, `gate-${name}`));
    this.gates.push(g);
    return g;
  }

  /** Opens every gate, so that a failed test leaves no job waiting forever behind it. */
  openGates(): void {
    for (const g of this.gates) g.open();
  }

  /**
   * The script that records a run's shell pid: a file per run, `pids-<job id>-<ns since epoch>`,
   * since each run of a job may have a uid of its own (docs/SECURITY.md), which cannot write
   * another run's file.
   */
  recordPid(): string {
    return `echo $$ > ${this.dir}/pids-$BERTH_JOB_ID-$(date +%s%N)`;
  }

  /**
   * A job that records its shell's pid (`recordPid`, one file per run) and then waits for
   * `gate`. `cpu` is its request in cores. With `term: 'record'` it writes `term-<job id>-<pid>`
   * when it gets SIGTERM and exits; with `term: 'ignore'` it ignores SIGTERM (only SIGKILL ends it).
   */
  async blocking(project: string, gate: Gate, opts: BlockingOptions = {}): Promise<Job> {
    const trap =
      opts.term === 'record'
        ? `trap 'echo term > ${this.dir}/term-$BERTH_JOB_ID-$$; exit 143' TERM; `
        : opts.term === 'ignore'
          ? "trap '' TERM; "
          : '';
    return this.submit(project, {
      script: `${trap}${this.recordPid()}; ${gate.wait}`,
      priority: opts.priority ?? 0,
      ...(opts.cpu === undefined ? {} : { requests: { cpu: String(opts.cpu) } }),
    });
  }

  /** Whether the job's process got SIGTERM (see `blocking`). */
  gotTerm(id: number): boolean {
    return readdirSync(this.dir).some((f) => f.startsWith(`term-${id}-`));
  }

  async workers(jobId: number): Promise<Worker[]> {
    const all = (await this.req<Worker[]>('GET', '/workers')).body;
    return all.filter((w) => w.jobId === jobId).sort((a, b) => a.id - b.id);
  }

  async submit(project: string, body: Record<string, unknown>): Promise<Job> {
    const r = await this.req<Job>('POST', `/projects/${project}/jobs`, body);
    assert.equal(r.status, 201, r.text);
    return r.body;
  }

  async job(id: number): Promise<Job> {
    const r = await this.req<Job>('GET', `/jobs/${id}`);
    assert.equal(r.status, 200, r.text);
    return r.body;
  }

  async events(id: number): Promise<Event[]> {
    return (await this.req<Event[]>('GET', `/jobs/${id}/events`)).body;
  }

  /** The job's attempts (`GET /jobs/{id}/attempts`). */
  async attempts(id: number): Promise<{ attempt: number; outcome: string; charged: string | null }[]> {
    return (
      await this.req<{ attempt: number; outcome: string; charged: string | null }[]>(
        'GET',
        `/jobs/${id}/attempts`,
      )
    ).body;
  }

  async types(id: number): Promise<string[]> {
    return (await this.events(id)).map((e) => e.type);
  }

  /** Waits until `check` holds for the job; returns the job then. */
  async until(id: number, what: string, check: (j: Job) => boolean, timeoutMs = 20_000): Promise<Job> {
    let last: Job | undefined;
    try {
      return await waitFor(
        `job ${id} ${what}`,
        async () => {
          last = await this.job(id);
          return check(last) ? last : undefined;
        },
        timeoutMs,
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}; last seen: ${JSON.stringify(last)}`);
    }
  }

  /** Running, with `runs` pids written (so its process exists): returns the pids, oldest first. */
  async running(id: number, runs = 1): Promise<number[]> {
    await this.until(id, 'to run', (j) => j.state === 'running');
    return waitFor(`job ${id} to write pid number ${runs}`, () => {
      const pids = this.pids(id);
      return pids.length >= runs ? pids : undefined;
    });
  }

  /**
   * Each run's pid as the host numbers it (a run may see its own pid namespace's numbers): found
   * while the run's process lives, the first time its file is read, and kept (-1, never alive, for
   * a run gone before it was looked at).
   */
  pids(id: number): number[] {
    const prefix = `pids-${id}-`;
    return readdirSync(this.dir)
      .filter((f) => f.startsWith(prefix))
      .map((f) => ({ f, at: BigInt(f.slice(prefix.length)) }))
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
      .map(({ f }) => {
        const known = this.hostPid.get(f);
        if (known !== undefined) return known;
        const seen = Number(readFileSync(join(this.dir, f), 'utf8').trim());
        if (!(seen > 0)) return 0;
        const pid = hostPids(this.current().s, id, [seen])[0] ?? -1;
        this.hostPid.set(f, pid);
        return pid;
      })
      .filter((pid) => pid !== 0);
  }

  async done(id: number, timeoutMs = 30_000): Promise<Job> {
    return this.until(
      id,
      'to finish and be cleaned up',
      (j) => TERMINAL.includes(j.state) && j.cleanedUp,
      timeoutMs,
    );
  }

  /**
   * A barrier through the controller: a job in a queue of its own, run to the end. Every decision
   * the scheduler could take before it was submitted has been taken (and acted on) by then, so a
   * job still queued afterwards was considered and left waiting.
   */
  async barrier(): Promise<void> {
    if (!this.barrierReady) {
      await this.queue({ name: 'barrier', quota: { jobs: '1' } });
      this.barrierReady = true;
    }
    const j = await this.submit('barrier', { command: ['true'] });
    assert.equal((await this.done(j.id)).state, 'succeeded');
  }

  /** The intervals during which each job held quota, rebuilt from the timelines. */
  async holdings(jobs: Job[]): Promise<Holding[]> {
    const out: Holding[] = [];
    for (const j of jobs) {
      let start: number | null = null;
      for (const e of await this.events(j.id)) {
        if (e.type === 'admitted') {
          assert.equal(start, null, `job ${j.id} admitted twice without being released`);
          start = Date.parse(e.at);
        } else if ((e.type === 'requeued' || TERMINAL.includes(e.type)) && start !== null) {
          out.push({ job: j, from: start, to: Date.parse(e.at) });
          start = null;
        }
      }
      if (start !== null) out.push({ job: j, from: start, to: Infinity });
    }
    return out;
  }
}

export class Gate {
  constructor(readonly path: string) {}

  get wait(): string {
    return `while [ ! -e ${this.path} ]; do sleep 0.05; done`;
  }

  open(): void {
    writeFileSync(this.path, '');
  }
}

export interface Holding {
  job: Job;
  from: number;
  /** When the quota was given back (requeued or finished). */
  to: number;
}

/** A job's request of a resource: cores for cpu, 1 for the implicit `jobs`. */
export function amount(j: Job, resource: string): number {
  if (resource === 'jobs') return 1;
  return Number(j.requests[resource] ?? 0);
}

/**
 * The most of `resource` held at once by the holdings that pass `filter`. A release and an
 * admission at the same millisecond count release first: quota is given back before it is reused.
 */
export function peak(
  holdings: Holding[],
  resource: string,
  filter: (h: Holding) => boolean = () => true,
): number {
  const points: [number, number][] = [];
  for (const h of holdings.filter(filter)) {
    const x = amount(h.job, resource);
    points.push([h.from, x], [h.to, -x]);
  }
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, d] of points) max = Math.max(max, (now += d));
  return max;
}

export const inQueue =
  (...queues: string[]) =>
  (h: Holding): boolean =>
    queues.includes(h.job.clusterQueue);

export { alive } from '../helpers/processes.js';
