/**
 * The factory conformance suite: what every `Factory` must do, checked through a real server
 * (real store, real HTTP, the real controller) and, where the contract is the factory's own, by
 * calling it directly. A new factory joins by giving a `FactorySubject` (factories.test.ts).
 *
 * The contract (src/factories/factory.ts): the capacity it was configured with, never more
 * workers alive at once; create → the agent starts the job → it runs → destroy; cancel stops the
 * job and destroys the worker; a worker that vanishes is reported lost and its job fails with a
 * reason that says so; destroy succeeds for a worker already gone (so twice is fine); after a
 * server restart (kill -9 included) a fresh factory either takes over the running workers an
 * earlier one made (`adopt`: the job goes on) or destroys them (the job fails saying why); either
 * way nothing a worker made outlives its job.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { WorkerView } from '../../src/domain/worker.js';
import type { Factory, WorkerHandle } from '../../src/factories/factory.js';
import { startServer, type RunningServer } from '../../src/server/run.js';
import { loadLiveWorkers } from '../../src/store/queries/workers.js';
import { events, getJob, submit, waitDone, type JobView } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call } from '../helpers/server.js';
import { serverDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

/**
 * The factory under test, with one target `t`. Its name is this test process's own (`f` and 6 hex
 * digits), so that what another run left in an outside system (Slurm jobs named after their
 * factory) is never taken for this run's leftovers.
 */
export const FACTORY = `f${randomBytes(3).toString('hex')}`;

export interface FactorySubject {
  kind: string;
  /** Settings of the factory besides kind and capacity (a Slurm partition, …). */
  fields?: Record<string, unknown>;
  /** Runs until it is stopped. */
  longCommand: string[];
  /** Ends at once, successfully. */
  quickCommand: string[];
  /**
   * Prints `hello` and exits with code 3, for a factory whose workers run real processes;
   * absent for one that only simulates runs (its jobs have no output or exit code of their own).
   */
  outputCommand?: string[];
  /** Makes the worker vanish without its agent reporting anything (kills it from outside). */
  loseWorker(w: { factory: Factory; workerId: number; handle: WorkerHandle | null }): Promise<void>;
  /**
   * What is left of worker `workerId` of the server on `dataDir` outside berth's records
   * (processes, directories, jobs in another system), one line each; [] when nothing is.
   */
  leftovers(dataDir: string, workerId: number): string[] | Promise<string[]>;
  /** Its workers outlive the server and are taken over after a restart (`Factory.adopt`). */
  adopts?: boolean;
  /** false: it runs no gang jobs (`workers` > 1), which then fail at once, saying why. */
  gangs?: false;
  /** Why the suite cannot run here (the system the factory drives is missing), or false. */
  skip?: string | false;
  /** Runs before the suite's servers start (e.g. starts the system the factory drives). */
  setUp?: () => Promise<void>;
}

function config(s: FactorySubject, capacity: number): string {
  const fields = JSON.stringify({ kind: s.kind, capacity, ...s.fields });
  return [
    'graceSeconds: 1',
    'heartbeatSeconds: 2',
    'defaultTarget: t',
    'factories:',
    `  ${FACTORY}: ${fields}`,
    'targets:',
    `  t: { factory: ${FACTORY} }`,
  ].join('\n');
}

interface Server {
  api: string;
  token: string;
  dataDir: string;
  running: RunningServer;
}

async function start(dataDir: string, configFile: string, listen = '127.0.0.1:0'): Promise<Server> {
  const database = (await serverDatabase(dataDir))?.url;
  const running = await startServer({
    dataDir,
    configFile,
    database,
    listen,
    print: () => {},
  });
  const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  return { api: `${running.url}/api/v1`, token, dataDir, running };
}

const waitState = (s: { api: string; token: string }, id: number, state: string) =>
  waitFor(`job ${id} to be ${state}`, async () => {
    const j = await getJob(s.api, s.token, id);
    return j.state === state ? j : undefined;
  });

async function workers(s: { api: string; token: string }): Promise<WorkerView[]> {
  return (await call<WorkerView[]>(s.api, s.token, 'GET', '/workers')).body;
}

/** The live record of a job's worker, with its handle, from the server's store. */
async function workerOf(s: Server, job: JobView) {
  const id = (await getJob(s.api, s.token, job.id)).worker?.id;
  assert.ok(id !== undefined, `job ${job.id} has a worker`);
  const record = (await loadLiveWorkers(s.running.context.store.db)).find((w) => w.id === id);
  assert.ok(record, `worker ${id} is live`);
  return record;
}

/** The job ended and was cleaned up; its worker is recorded destroyed and nothing of it is left. */
async function assertGone(subject: FactorySubject, s: Server | ServerProcessView, job: JobView) {
  // After a kill -9 on PostgreSQL the next server first waits for the dead one's lease to expire
  // (15 s), then rebuilds: a busy machine needs more than the usual half minute.
  const done = await waitDone(s.api, s.token, job.id, 60_000);
  const w = (await workers(s)).filter((x) => x.jobId === job.id);
  assert.ok(w.length > 0, `job ${job.id} had a worker`);
  for (const x of w) {
    assert.equal(x.state, 'destroyed', `worker ${x.id} of job ${job.id}`);
    assert.deepEqual(await subject.leftovers(s.dataDir, x.id), [], `what is left of worker ${x.id}`);
  }
  return done;
}

interface ServerProcessView {
  api: string;
  token: string;
  dataDir: string;
}

export function factoryConformance(subject: FactorySubject): void {
  describe(`factory kind ${subject.kind}: the Factory contract`, { skip: subject.skip ?? false }, () => {
    const dir = scratchDir(`berth-factory-${subject.kind}-`);
    const configFile = join(dir, 'berth.yaml');
    writeFileSync(configFile, config(subject, 2));
    let s: Server;
    before(async () => {
      await subject.setUp?.();
      s = await start(join(dir, 'data'), configFile);
    });
    after(async () => {
      await s?.running.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('has the capacity it was configured with, and never runs more workers at once', async () => {
      const factory = s.running.factories.get(FACTORY)!;
      assert.equal(factory.kind, subject.kind);
      assert.equal(factory.capacity, 2);
      const jobs: JobView[] = [];
      for (let i = 0; i < 3; i++)
        jobs.push(await submit(s.api, s.token, 'default', { command: subject.longCommand }));
      await waitState(s, jobs[0]!.id, 'running');
      await waitState(s, jobs[1]!.id, 'running');
      const third = await waitFor('the third job to wait for a worker', async () => {
        const j = await getJob(s.api, s.token, jobs[2]!.id);
        return j.reason.includes(`waiting for a worker from factory ${FACTORY}: 2/2 in use`) ? j : undefined;
      });
      assert.equal(third.state, 'admitted');
      const figures = (
        await call<{ name: string; inUse: number; waiting: number }[]>(s.api, s.token, 'GET', '/factories')
      ).body;
      assert.deepEqual(
        figures.map((f) => [f.name, f.inUse, f.waiting]),
        [[FACTORY, 2, 1]],
      );
      const live = (await workers(s)).filter((w) => w.state === 'creating' || w.state === 'ready');
      assert.equal(live.length, 2, 'two workers alive');
      await call(s.api, s.token, 'POST', `/jobs/${jobs[0]!.id}/cancel`);
      await waitState(s, jobs[2]!.id, 'running');
      for (const j of jobs.slice(1)) await call(s.api, s.token, 'POST', `/jobs/${j.id}/cancel`);
      for (const j of jobs) assert.equal((await assertGone(subject, s, j)).state, 'cancelled');
    });

    it('creates a worker that runs the job, then destroys it', async () => {
      const job = await submit(s.api, s.token, 'default', { command: subject.quickCommand });
      const done = await assertGone(subject, s, job);
      assert.equal(done.state, 'succeeded');
      const types = (await events(s.api, s.token, job.id)).map((e) => e.type);
      assert.deepEqual(
        types.filter((t) => ['worker-creating', 'started', 'succeeded'].includes(t)),
        ['worker-creating', 'started', 'succeeded'],
      );
    });

    if (subject.outputCommand) {
      const command = subject.outputCommand;
      it("carries the job's output and exit code", async () => {
        const job = await submit(s.api, s.token, 'default', { command });
        const done = await assertGone(subject, s, job);
        assert.equal(done.state, 'failed');
        assert.equal(done.exitCode, 3);
        assert.match((await call(s.api, s.token, 'GET', `/jobs/${job.id}/logs`)).text, /hello/);
      });
    }

    if (subject.gangs === false) {
      it('fails a gang job at once, saying why, and leaves nothing', async () => {
        const job = await submit(s.api, s.token, 'default', { command: subject.quickCommand, workers: 2 });
        const done = await assertGone(subject, s, job);
        assert.equal(done.state, 'failed');
        assert.match(done.reason, /gang/);
      });
    } else {
      it('gives a gang its workers all at once, one member per rank, and ends when every rank has', async () => {
        const job = await submit(s.api, s.token, 'default', { command: subject.quickCommand, workers: 2 });
        const done = await assertGone(subject, s, job);
        assert.equal(done.state, 'succeeded', done.reason);
        const started = (await events(s.api, s.token, job.id)).find((e) => e.type === 'started');
        assert.match(started?.message ?? '', /\(2 ranks\)/);
        const w = (await workers(s)).filter((x) => x.jobId === job.id);
        assert.equal(w.length, 1, 'one worker for the whole gang');
      });

      it('stops every rank of a gang on cancel, and gives back all its capacity', async () => {
        const job = await submit(s.api, s.token, 'default', { command: subject.longCommand, workers: 2 });
        await waitState(s, job.id, 'running');
        const inUse = async () =>
          (await call<{ inUse: number }[]>(s.api, s.token, 'GET', '/factories')).body[0]!.inUse;
        assert.equal(await inUse(), 2, 'a gang of two takes two units');
        await call(s.api, s.token, 'POST', `/jobs/${job.id}/cancel`);
        assert.equal((await assertGone(subject, s, job)).state, 'cancelled');
        assert.equal(await inUse(), 0);
      });
    }

    it('stops the job on cancel and destroys its worker', async () => {
      const job = await submit(s.api, s.token, 'default', { command: subject.longCommand });
      await waitState(s, job.id, 'running');
      assert.equal((await call(s.api, s.token, 'POST', `/jobs/${job.id}/cancel`)).status, 200);
      const done = await assertGone(subject, s, job);
      assert.equal(done.state, 'cancelled');
      assert.match(done.reason, /cancelled by admin/);
    });

    it('reports a worker that vanished as lost: its job fails saying so, and it is destroyed', async () => {
      const job = await submit(s.api, s.token, 'default', { command: subject.longCommand });
      await waitState(s, job.id, 'running');
      const w = await workerOf(s, job);
      await subject.loseWorker({
        factory: s.running.factories.get(FACTORY)!,
        workerId: w.id,
        handle: w.handle,
      });
      const done = await assertGone(subject, s, job);
      assert.equal(done.state, 'failed');
      assert.match(done.reason, /worker lost/);
    });

    it('destroys a worker that is already gone: twice from outside, then by the controller', async () => {
      const job = await submit(s.api, s.token, 'default', { command: subject.longCommand });
      await waitState(s, job.id, 'running');
      const w = await workerOf(s, job);
      const factory = s.running.factories.get(FACTORY)!;
      await factory.destroy(w.id, w.handle);
      await factory.destroy(w.id, w.handle);
      const done = await assertGone(subject, s, job);
      assert.equal(done.state, 'failed', 'a job whose worker was destroyed under it does not succeed');
    });
  });

  describe(`factory kind ${subject.kind}: across restarts`, { skip: subject.skip ?? false }, () => {
    const dir = scratchDir(`berth-factory-${subject.kind}-restart-`);
    const configFile = join(dir, 'berth.yaml');
    writeFileSync(configFile, config(subject, 2));
    let child: ServerProcess | undefined;
    before(async () => subject.setUp?.());
    after(async () => {
      if (child) await killHard(child);
      rmSync(dir, { recursive: true, force: true });
    });

    /** A restart's outcome for a job that was running: it goes on (adopted) or fails. */
    async function afterRestart(view: ServerProcessView, job: JobView) {
      if (subject.adopts) {
        const still = await waitFor(`job ${job.id} to be taken over`, async () => {
          const types = (await events(view.api, view.token, job.id)).map((e) => e.type);
          return types.includes('worker-adopted') ? getJob(view.api, view.token, job.id) : undefined;
        });
        assert.equal(still.state, 'running', 'its worker taken over, the job goes on');
        assert.equal((await call(view.api, view.token, 'POST', `/jobs/${job.id}/cancel`)).status, 200);
        const done = await assertGone(subject, view, job);
        assert.equal(done.state, 'cancelled');
        assert.match(done.reason, /cancelled by admin/);
      } else {
        const done = await assertGone(subject, view, job);
        assert.equal(done.state, 'failed');
        assert.match(done.reason, /server restarted/);
      }
    }

    const fate = subject.adopts ? 'takes over' : 'destroys';
    it(`a fresh factory ${fate} the worker its predecessor made before the server stopped`, async () => {
      const dataDir = join(dir, 'stopped');
      let s = await start(dataDir, configFile);
      const job = await submit(s.api, s.token, 'default', { command: subject.longCommand });
      await waitState(s, job.id, 'running');
      await s.running.close();
      // On the same port: the agents of a worker taken over reach the server at the same URL.
      s = await start(dataDir, configFile, new URL(s.running.url).host);
      try {
        await afterRestart(s, job);
      } finally {
        await s.running.close();
      }
    });

    it(`after kill -9 of the server, the next one ${fate} the worker; nothing outlives the job`, async () => {
      const dataDir = join(dir, 'killed');
      child = await spawnServer(dataDir, configFile);
      const view = () => ({ api: child!.api, token: child!.token, dataDir });
      const job = await submit(child.api, child.token, 'default', { command: subject.longCommand });
      await waitState(view(), job.id, 'running');
      await killHard(child);
      child = await spawnServer(dataDir, configFile, { listen: new URL(child.url).host });
      await afterRestart(view(), job);
      assert.ok((await workers(view())).every((w) => w.state === 'destroyed'));
    });
  });
}
