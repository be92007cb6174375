/**
 * The store's contract: what the services and the controller rely on from the query modules of
 * src/store/queries/, held against each dialect in the same process (stores.test.ts), in the
 * manner of Kysely's tests looping over dialects. Every assertion is the same for SQLite and
 * PostgreSQL: exact records, orders, counts, text and integers as they go in.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobRecord, JobSpec } from '../../src/domain/job.js';
import { buildClusterQueueSpec } from '../../src/domain/cluster-queue-spec.js';
import { MAX_QUEUED_LIMIT } from '../../src/domain/project.js';
import { hashToken, newToken, tokenId } from '../../src/domain/tokens.js';
import type { Allocation } from '../../src/domain/usage.js';
import type { WorkerRecord } from '../../src/domain/worker.js';
import { insertAttempt, listAttempts, type AttemptRecord } from '../../src/store/queries/attempts.js';
import { insertAudit, listAudit, type AuditRecord } from '../../src/store/queries/audit.js';
import {
  deleteClusterQueue,
  findClusterQueue,
  insertClusterQueue,
  listClusterQueues,
  updateClusterQueue,
} from '../../src/store/queries/cluster-queues.js';
import { appendEvent, deferEvents, flushEvents, listJobEvents } from '../../src/store/queries/events.js';
import {
  countArrayTasks,
  findArrayTaskId,
  insertArrayTasks,
  queuedArrayTaskIds,
  requestArrayCancel,
  unfinishedArrayTaskIds,
} from '../../src/store/queries/job-arrays.js';
import { countJobs, jobCountsOf, noJobs } from '../../src/store/queries/job-counts.js';
import {
  activeJobPages,
  archiveProjectJobs,
  countUnfinishedInQueue,
  existingJobIds,
  moveQueuedJobs,
  unfinishedJobIds,
  findJob,
  findJobByKey,
  findJobs,
  findJobState,
  insertJobs,
  listJobs,
  loadActiveJobs,
  loadJobsInPlay,
  updateJob,
  type JobUpdate,
  type NewJob,
} from '../../src/store/queries/jobs.js';
import {
  deleteMember,
  deletePrivilege,
  deleteProject,
  insertPrivilege,
  listAllPrivileges,
  listPrivileges,
  projectsUsingQueue,
  findProject,
  findRole,
  insertProject,
  listMembers,
  listProjects,
  updateProject,
  upsertMember,
  type ProjectFields,
} from '../../src/store/queries/projects.js';
import {
  insertInstance,
  instancesOfJobs,
  listInstances,
  loadLiveInstances,
  updateInstance,
} from '../../src/store/queries/resource-instances.js';
import * as retention from '../../src/store/queries/retention.js';
import {
  deleteJobTokens,
  deleteToken,
  deleteTokensLabelled,
  findToken,
  findUserToken,
  touchToken,
  insertJobToken,
  insertToken,
  listUserTokens,
} from '../../src/store/queries/tokens.js';
import { listAllocations, recentRuns, recordAllocation, sumUsage } from '../../src/store/queries/usage.js';
import {
  countUsers,
  deleteUser,
  findUserByName,
  insertUser,
  listUsers,
} from '../../src/store/queries/users.js';
import {
  hasCredential,
  insertWorker,
  latestWorkers,
  spendRegistration,
  workerWithCredential,
  workersOfLastAllocations,
  listWorkers,
  loadLiveWorkers,
  updateWorker,
} from '../../src/store/queries/workers.js';
import type { Store } from '../../src/store/store.js';
import type { OpenedStore, StoreKind } from './stores.js';

/** Text with what a careless round trip would mangle: quotes, backslashes, non-ASCII, no NUL. */
export const AWKWARD_TEXT = `it's "quoted" \\ back\\slash ; DROP TABLE jobs; -- naïve 日本語 🚀 \t tab\nline`;

/** The largest integer a JavaScript number holds exactly (int8 columns keep it on both stores). */
const BIG = Number.MAX_SAFE_INTEGER;
/** The latest time a Date holds (ms): a time column read back as an ISO string must keep it. */
const LATEST = 8_640_000_000_000_000;
/** The largest value of a PostgreSQL `integer` column. */
const INT4_MAX = 2_147_483_647;
/** A fixed time (ms): 2026-01-02T03:04:05.678Z. */
const T0 = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
const HOUR = 3_600_000;

const spec: JobSpec = {
  command: ['sh', '-c', AWKWARD_TEXT],
  env: { GREETING: AWKWARD_TEXT },
  timeoutSeconds: 30,
  requests: { cpu: '500m', memory: '1Gi' },
  resources: [],
  dependsOn: [],
};

const newJob = (project: string, name: string, fields: Partial<NewJob> = {}): NewJob => ({
  project,
  name,
  clusterQueue: 'default',
  target: 'local',
  priority: 0,
  spec,
  idempotencyKey: null,
  createdBy: 'alice',
  reason: 'submitted',
  ...fields,
});

/** Inserts `jobs`, each of which must go in (none repeats a key). */
async function inserted(store: Store, jobs: NewJob[], now = T0): Promise<JobRecord[]> {
  const records = await insertJobs(store.db, jobs, now);
  return records.map((r, i) => {
    assert.ok(r, `job ${i} was inserted`);
    return r;
  });
}

const ids = (jobs: { id: number }[]): number[] => jobs.map((j) => j.id);

export function storeConformance(kind: StoreKind): void {
  describe(`store conformance: ${kind.dialect}`, { skip: kind.skip }, () => {
    let opened: OpenedStore;
    const store = (): Store => opened.store;
    before(async () => {
      opened = await kind.open();
      assert.equal(opened.store.dialect, kind.dialect);
    });
    after(() => opened?.dispose());

    describe('jobs', () => {
      it("counts a project's jobs by state as they change, moves its queued ones, and archives them", async () => {
        const s = store();
        const p = 'p-counts';
        const jobs = await inserted(
          s,
          ['a', 'b', 'c'].map((n) => newJob(p, n, { clusterQueue: 'cq-counts' })),
        );
        const [a, b, c] = jobs as [JobRecord, JobRecord, JobRecord];
        await updateJob(s.db, a.id, { state: 'running' });
        await updateJob(s.db, b.id, { state: 'succeeded' });
        assert.deepEqual(await existingJobIds(s.db, p, [a.id, c.id, c.id + 1000]), new Set([a.id, c.id]));
        assert.deepEqual(await existingJobIds(s.db, 'p-elsewhere', [a.id]), new Set());
        assert.deepEqual(await unfinishedJobIds(s.db, p), [a.id, c.id]);
        assert.equal(await countUnfinishedInQueue(s.db, 'cq-counts'), 2);
        const counts = (await jobCountsOf(s.db, [p])).get(p);
        assert.deepEqual(counts, { ...noJobs(), running: 1, succeeded: 1, queued: 1 });
        assert.equal(await countJobs(s.db, p), 3);
        assert.equal(await countJobs(s.db, p, ['queued', 'running']), 2);
        await moveQueuedJobs(s.db, p, 'cq-moved');
        assert.equal((await findJob(s.db, c.id))?.clusterQueue, 'cq-moved', 'a queued job follows');
        assert.equal((await findJob(s.db, a.id))?.clusterQueue, 'cq-counts', 'a running one stays');
        await appendEvent(
          s.db,
          { subjectKind: 'project', subject: p, type: 'created', message: 'm', project: p },
          T0,
        );
        await archiveProjectJobs(s.db, p, 'p-counts~archived');
        assert.equal((await findJob(s.db, b.id))?.project, 'p-counts~archived');
        assert.equal(await countJobs(s.db, p), 0);
        assert.equal(await countJobs(s.db, 'p-counts~archived'), 3);
      });

      it('inserts one job and reads back exactly its record, by id and by idempotency key', async () => {
        const [job] = await inserted(store(), [newJob('p-one', AWKWARD_TEXT, { idempotencyKey: 'key-1' })]);
        assert.deepEqual(await findJob(store().db, job!.id), job);
        assert.deepEqual(await findJobByKey(store().db, 'p-one', 'key-1'), job);
        assert.equal(await findJobByKey(store().db, 'p-other', 'key-1'), undefined, 'keys are per project');
        assert.equal(await findJobState(store().db, job!.id), 'queued');
        assert.equal(job!.spec.env.GREETING, AWKWARD_TEXT);
        assert.equal(job!.createdAt, T0);
        assert.equal(await findJob(store().db, job!.id + 1000), undefined);
      });

      it('inserts in bulk, each in its place, leaving out keys already used (in the store or earlier in the list)', async () => {
        const s = store();
        await inserted(s, [newJob('p-bulk', 'old', { idempotencyKey: 'taken' })]);
        const jobs = [
          newJob('p-bulk', 'a'),
          newJob('p-bulk', 'b', { idempotencyKey: 'taken' }),
          newJob('p-bulk', 'c', { idempotencyKey: 'k' }),
          newJob('p-bulk', 'd', { idempotencyKey: 'k' }),
          newJob('p-bulk2', 'e', { idempotencyKey: 'k' }),
        ];
        const out = await insertJobs(s.db, jobs, T0);
        assert.deepEqual(
          out.map((r) => r?.name),
          ['a', undefined, 'c', undefined, 'e'],
        );
        const kept = out.filter((r) => r !== undefined);
        assert.deepEqual(
          [...kept].sort((x, y) => x.id - y.id).map((r) => r.name),
          ['a', 'c', 'e'],
          'ids rise in the order of the input',
        );
        for (const r of kept) assert.deepEqual(await findJob(s.db, r.id), r);
        const found = await findJobs(s.db, [...ids(kept), 999_999]);
        assert.deepEqual(
          ids(found).sort((x, y) => x - y),
          ids(kept),
        );
      });

      it('updates the fields it is given and no other, with large integers and times intact', async () => {
        const s = store();
        const [job] = await inserted(s, [newJob('p-update', 'u')]);
        const changes: JobUpdate = {
          state: 'failed',
          reason: AWKWARD_TEXT,
          exitCode: -2_147_483_648,
          borrowed: { cpu: '2' },
          cancelRequested: true,
          cleanedUp: true,
          attempts: 3,
          retried: 2,
          infraRetried: 1,
          retryAt: BIG,
          queuedAt: T0 + 1,
          admittedAt: T0 + 2,
          startedAt: T0 + 3,
          finishedAt: T0 + 4,
        };
        await updateJob(s.db, job!.id, changes);
        assert.deepEqual(await findJob(s.db, job!.id), { ...job, ...changes });
        await updateJob(s.db, job!.id, { borrowed: null, retryAt: null });
        const again = await findJob(s.db, job!.id);
        assert.equal(again!.borrowed, null);
        assert.equal(again!.retryAt, null);
        assert.equal(again!.reason, AWKWARD_TEXT, 'a field not named is left as it was');
      });

      it('lists a page in each sort, after a cursor, by state, with arrays collapsed', async () => {
        const s = store();
        const p = 'p-list';
        const jobs = await inserted(
          s,
          [3, 1, 3, 2, 1].map((priority, i) => newJob(p, `j${i}`, { priority })),
        );
        const [j0, j1, j2, j3, j4] = jobs as [JobRecord, JobRecord, JobRecord, JobRecord, JobRecord];
        await updateJob(s.db, j1.id, { state: 'running' });
        await updateJob(s.db, j3.id, { state: 'succeeded' });
        const page = async (q: Omit<Parameters<typeof listJobs>[1], 'project'>) =>
          ids(await listJobs(s.db, { project: p, ...q }));
        assert.deepEqual(await page({ sort: 'id', limit: 10 }), ids(jobs));
        assert.deepEqual(await page({ sort: '-id', limit: 2 }), [j4.id, j3.id]);
        assert.deepEqual(await page({ sort: '-id', limit: 2, after: { key: j3.id, id: j3.id } }), [
          j2.id,
          j1.id,
        ]);
        assert.deepEqual(await page({ sort: 'id', limit: 10, after: { key: j2.id, id: j2.id } }), [
          j3.id,
          j4.id,
        ]);
        // Priority orders: ties by newest first.
        assert.deepEqual(await page({ sort: '-priority', limit: 10 }), [j2.id, j0.id, j3.id, j4.id, j1.id]);
        assert.deepEqual(await page({ sort: 'priority', limit: 10 }), [j4.id, j1.id, j3.id, j2.id, j0.id]);
        assert.deepEqual(await page({ sort: '-priority', limit: 2, after: { key: 3, id: j0.id } }), [
          j3.id,
          j4.id,
        ]);
        assert.deepEqual(await page({ sort: 'id', limit: 10, states: ['running', 'succeeded'] }), [
          j1.id,
          j3.id,
        ]);
        assert.deepEqual(await page({ sort: '-priority', limit: 10, states: ['queued'] }), [
          j2.id,
          j0.id,
          j4.id,
        ]);
        const listed = await listJobs(s.db, { project: p, sort: 'id', limit: 1 });
        assert.deepEqual(listed, [j0], 'a listed job is its whole record');
        assert.deepEqual(await listJobs(s.db, { project: 'p-none', sort: 'id', limit: 10 }), []);
      });

      it('reads the active jobs (not cleaned up) in id order, in pages, and those in play', async () => {
        const s = store();
        const before = ids(await loadActiveJobs(s.db));
        const jobs = await inserted(
          s,
          ['a', 'b', 'c'].map((n) => newJob('p-active', n)),
        );
        const [a, b, c] = jobs as [JobRecord, JobRecord, JobRecord];
        await updateJob(s.db, a.id, { state: 'succeeded', cleanedUp: true, finishedAt: T0 });
        await updateJob(s.db, b.id, { state: 'running' });
        const active = ids(await loadActiveJobs(s.db));
        assert.deepEqual(active, [...before.filter((id) => id !== a.id), b.id, c.id]);
        assert.deepEqual(
          [...active].sort((x, y) => x - y),
          active,
          'in id order',
        );
        const pages: number[][] = [];
        for await (const pageOf of activeJobPages(s.db, 2)) pages.push(ids(pageOf));
        assert.ok(pages.every((pg) => pg.length <= 2 && pg.length > 0));
        assert.deepEqual(pages.flat(), active);
        const inPlay = await loadJobsInPlay(s.db);
        assert.ok(inPlay.some((j) => j.id === b.id));
        assert.ok(!inPlay.some((j) => j.id === c.id || j.id === a.id));
        const fromPage = (await loadActiveJobs(s.db)).find((j) => j.id === c.id);
        assert.deepEqual(fromPage, c);
      });
    });

    describe('events and attempts', () => {
      it("keeps a job's events in order, at once or deferred to the end of a transaction", async () => {
        const s = store();
        const [job] = await inserted(s, [newJob('p-events', 'e')]);
        const event = (type: string, data?: unknown) => ({
          subjectKind: 'job',
          subject: String(job!.id),
          type,
          message: `${type}: ${AWKWARD_TEXT}`,
          project: 'p-events',
          jobId: job!.id,
          ...(data === undefined ? {} : { data }),
        });
        await appendEvent(s.db, event('submitted'), T0);
        await s.transaction(async (tx) => {
          deferEvents(tx);
          await appendEvent(tx, event('admitted', { big: BIG, nested: [1, 'two'] }), T0 + 1);
          await appendEvent(tx, event('started'), T0 + 2);
          await flushEvents(tx);
        });
        const events = await listJobEvents(s.db, job!.id);
        assert.deepEqual(
          events.map(({ id: _id, ...e }) => e),
          [
            { at: new Date(T0).toISOString(), ...pick(event('submitted')) },
            {
              at: new Date(T0 + 1).toISOString(),
              ...pick(event('admitted')),
              data: { big: BIG, nested: [1, 'two'] },
            },
            { at: new Date(T0 + 2).toISOString(), ...pick(event('started')) },
          ],
        );
        assert.deepEqual(
          ids(events),
          [...ids(events)].sort((x, y) => x - y),
        );
      });

      it('rolls back the events of a transaction that fails', async () => {
        const s = store();
        const [job] = await inserted(s, [newJob('p-events', 'rollback')]);
        await assert.rejects(
          s.transaction(async (tx) => {
            await appendEvent(
              tx,
              { subjectKind: 'job', subject: 'x', type: 't', message: 'm', jobId: job!.id },
              T0,
            );
            throw new Error('no');
          }),
          /no/,
        );
        assert.deepEqual(await listJobEvents(s.db, job!.id), []);
      });

      it("keeps a job's attempts, first to last", async () => {
        const s = store();
        const [job] = await inserted(s, [newJob('p-attempts', 'a')]);
        const attempt = (n: number, fields: Partial<AttemptRecord> = {}): AttemptRecord => ({
          jobId: job!.id,
          attempt: n,
          outcome: 'retried',
          charged: 'none',
          reason: AWKWARD_TEXT,
          exitCode: 1,
          startedAt: T0 + n,
          endedAt: T0 + 10 * n,
          logEnd: BIG - n,
          ...fields,
        });
        const two = attempt(2, { outcome: 'requeued', exitCode: null, startedAt: null });
        await insertAttempt(s.db, two);
        await insertAttempt(s.db, attempt(1));
        assert.deepEqual(await listAttempts(s.db, job!.id), [attempt(1), two]);
        await assert.rejects(insertAttempt(s.db, attempt(1)), 'an attempt is recorded once');
      });
    });

    describe('workers and resource instances', () => {
      it("spends a gang worker's registration once per member, then puts the next credential in its place", async () => {
        const s = store();
        const [job] = await inserted(s, [newJob('p-registration', 'gang')]);
        const hash = hashToken(newToken('agent'));
        const w = await insertWorker(
          s.db,
          { jobId: job!.id, factory: 'local', target: 'local', registration: hash, members: 2 },
          T0,
        );
        const pilot = hashToken(newToken('agent'));
        const asked: [string, number][] = [];
        const next = (target: string, jobId: number) => {
          asked.push([target, jobId]);
          return Promise.resolve(pilot);
        };
        assert.equal(await spendRegistration(s.db, w, hashToken(newToken('agent')), T0, next), undefined);
        assert.equal(await workerWithCredential(s.db, job!.id, hash), w);
        assert.deepEqual(await spendRegistration(s.db, w, hash, T0, next), {
          jobId: job!.id,
          target: 'local',
        });
        assert.deepEqual(asked, [], 'one member is left to register');
        assert.deepEqual(await spendRegistration(s.db, w, hash, T0, next), {
          jobId: job!.id,
          target: 'local',
        });
        assert.deepEqual(asked, [['local', job!.id]]);
        assert.equal(await spendRegistration(s.db, w, hash, T0, next), undefined, 'spent');
        assert.equal(await hasCredential(s.db, w, pilot), true);
        assert.equal(await hasCredential(s.db, w, hash), false);
        await updateWorker(s.db, w, { state: 'destroyed' }, T0);
        assert.equal(await hasCredential(s.db, w, pilot), false, 'only a live worker holds one');
      });

      it('takes a worker through creating → ready → destroying → destroyed; only live ones load', async () => {
        const s = store();
        const [job] = await inserted(s, [newJob('p-workers', 'w')]);
        const w1 = await insertWorker(s.db, { jobId: job!.id, factory: 'local', target: 'local' }, T0);
        const w2 = await insertWorker(s.db, { jobId: job!.id, factory: 'local', target: 'local' }, T0 + 1);
        assert.ok(w2 > w1);
        // In no particular order (loadLiveWorkers promises none): by id here.
        const live = async () =>
          (await loadLiveWorkers(s.db)).filter((w) => w.jobId === job!.id).sort((x, y) => x.id - y.id);
        const worker = (id: number, fields: Partial<WorkerRecord> = {}): WorkerRecord => ({
          id,
          jobId: job!.id,
          factory: 'local',
          target: 'local',
          state: 'creating',
          handle: null,
          error: null,
          ...fields,
        });
        assert.deepEqual(await live(), [worker(w1), worker(w2)]);
        const handle = { pid: BIG, dir: AWKWARD_TEXT } as never;
        await updateWorker(s.db, w1, { state: 'ready', handle }, T0 + 5);
        await updateWorker(s.db, w2, { state: 'failed', error: AWKWARD_TEXT }, T0 + 5);
        assert.deepEqual(await live(), [worker(w1, { state: 'ready', handle })]);
        await updateWorker(s.db, w1, { state: 'destroying' }, T0 + 6);
        assert.deepEqual(
          (await live()).map((w) => w.state),
          ['destroying'],
        );
        await updateWorker(s.db, w1, { state: 'destroyed' }, T0 + 7);
        assert.deepEqual(await live(), []);
        const views = (await listWorkers(s.db)).filter((w) => w.jobId === job!.id);
        assert.deepEqual(ids(views), [w2, w1], 'newest first');
        assert.equal(views[0]!.error, AWKWARD_TEXT);
        assert.equal(views[1]!.updatedAt, new Date(T0 + 7).toISOString());
        assert.equal(views[1]!.createdAt, new Date(T0).toISOString());
        assert.deepEqual(
          ids(await listWorkers(s.db, 'failed')).filter((id) => id === w2),
          [w2],
        );
        assert.equal((await latestWorkers(s.db, [job!.id])).get(job!.id)?.id, w2);
      });

      it('takes a resource instance through the same life cycle, with its metadata', async () => {
        const s = store();
        const [job] = await inserted(s, [newJob('p-instances', 'r')]);
        const i1 = await insertInstance(s.db, job!.id, 'postgres', T0);
        const i2 = await insertInstance(s.db, job!.id, 'token', T0 + 1);
        const live = async () => (await loadLiveInstances(s.db)).filter((i) => i.jobId === job!.id);
        assert.deepEqual(
          (await live()).sort((a, b) => a.id - b.id),
          [
            { id: i1, jobId: job!.id, type: 'postgres', state: 'creating', metadata: null },
            { id: i2, jobId: job!.id, type: 'token', state: 'creating', metadata: null },
          ],
        );
        const metadata = { url: `postgres://x/${AWKWARD_TEXT}`, port: '5432' };
        await updateInstance(s.db, i1, { state: 'ready', metadata }, T0 + 2);
        await updateInstance(s.db, i2, { state: 'destroying' }, T0 + 2);
        assert.deepEqual(
          (await live()).sort((a, b) => a.id - b.id),
          [
            { id: i1, jobId: job!.id, type: 'postgres', state: 'ready', metadata },
            { id: i2, jobId: job!.id, type: 'token', state: 'destroying', metadata: null },
          ],
        );
        assert.deepEqual(
          (await instancesOfJobs(s.db, [job!.id])).get(job!.id)?.map((i) => i.id),
          [i1, i2],
        );
        await updateInstance(s.db, i2, { state: 'destroyed' }, T0 + 3);
        await updateInstance(s.db, i1, { state: 'failed', error: AWKWARD_TEXT, metadata: null }, T0 + 3);
        assert.deepEqual(await live(), []);
        const [view] = (await listInstances(s.db, 'failed')).filter((i) => i.id === i1);
        assert.deepEqual(view, {
          id: i1,
          jobId: job!.id,
          type: 'postgres',
          state: 'failed',
          error: AWKWARD_TEXT,
          createdAt: new Date(T0).toISOString(),
          updatedAt: new Date(T0 + 3).toISOString(),
        });
      });
    });

    describe('users, tokens, projects and cluster queues', () => {
      it('keeps users by name, in name order, and deletes them', async () => {
        const s = store();
        const n = await countUsers(s.db);
        const zed = await insertUser(s.db, 'zed-ü', false, T0);
        const amy = await insertUser(s.db, 'amy', true, T0 + 1);
        assert.deepEqual(zed, {
          id: zed.id,
          name: 'zed-ü',
          admin: false,
          createdAt: new Date(T0).toISOString(),
        });
        assert.deepEqual(await findUserByName(s.db, 'amy'), amy);
        assert.equal(await countUsers(s.db), n + 2);
        const names = (await listUsers(s.db)).map((u) => u.name);
        assert.ok(names.indexOf('amy') < names.indexOf('zed-ü'));
        await assert.rejects(insertUser(s.db, 'amy', false, T0), 'names are unique');
        await deleteUser(s.db, zed.id);
        assert.equal(await findUserByName(s.db, 'zed-ü'), undefined);
        assert.equal(await countUsers(s.db), n + 1);
      });

      it('finds a token by its hash, with its user or its job, and forgets it when deleted', async () => {
        const s = store();
        const user = await insertUser(s.db, 'token-owner', false, T0);
        const token = newToken('user');
        await insertToken(
          s.db,
          { hash: hashToken(token), userId: user.id, jobId: null, label: AWKWARD_TEXT, expiresAt: LATEST },
          T0,
        );
        assert.deepEqual(await findToken(s.db, hashToken(token)), {
          user,
          jobId: null,
          expiresAt: LATEST,
          scope: null,
          access: null,
        });
        const [listed] = await listUserTokens(s.db, user.id);
        assert.equal(listed?.label, AWKWARD_TEXT);
        assert.equal(listed?.expiresAt, new Date(LATEST).toISOString());
        const [job] = await inserted(s, [newJob('p-tokens', 't')]);
        const jobToken = newToken('job');
        await insertJobToken(s.db, jobToken, job!.id, 'agent', T0);
        assert.deepEqual(await findToken(s.db, hashToken(jobToken)), {
          user: null,
          jobId: job!.id,
          expiresAt: null,
          scope: null,
          access: null,
        });
        await deleteJobTokens(s.db, job!.id);
        assert.equal(await findToken(s.db, hashToken(jobToken)), undefined);
        await deleteToken(s.db, hashToken(token));
        assert.equal(await findToken(s.db, hashToken(token)), undefined);
        assert.deepEqual(await listUserTokens(s.db, user.id), []);
        assert.equal(await findToken(s.db, hashToken(newToken('user'))), undefined);
      });

      it("finds a user token by its public id, records its use without going back, deletes a well's by label", async () => {
        const s = store();
        const user = await insertUser(s.db, 'token-user', false, T0);
        const hash = hashToken(newToken('user'));
        await insertToken(s.db, { hash, userId: user.id, jobId: null, label: 'well-7', expiresAt: null }, T0);
        const wellHash = hashToken(newToken('job'));
        await insertToken(
          s.db,
          { hash: wellHash, userId: null, jobId: null, label: 'well-7', expiresAt: null },
          T0,
        );
        assert.equal((await findUserToken(s.db, tokenId(hash)))?.hash, hash);
        assert.equal(await findUserToken(s.db, tokenId(hash), user.id + 1), undefined);
        assert.equal(await findUserToken(s.db, tokenId(wellHash)), undefined, 'not a user token');
        await touchToken(s.db, hash, T0 + 10);
        await touchToken(s.db, hash, T0 + 5);
        assert.equal((await findUserToken(s.db, tokenId(hash)))?.lastUsedAt, new Date(T0 + 10).toISOString());
        await deleteTokensLabelled(s.db, 'well-7');
        assert.equal(await findToken(s.db, wellHash), undefined);
        assert.ok(await findToken(s.db, hash), "a user's token of that label stays");
      });

      it('keeps projects with their members, and cluster queues with their specs', async () => {
        const s = store();
        const queue = buildClusterQueueSpec({ name: 'cq-conformance', quota: { cpu: '4', memory: '8Gi' } });
        await insertClusterQueue(s.db, queue, T0);
        const found = await findClusterQueue(s.db, 'cq-conformance');
        assert.deepEqual(found, {
          ...queue,
          createdAt: new Date(T0).toISOString(),
          updatedAt: new Date(T0).toISOString(),
        });
        await updateClusterQueue(s.db, { ...queue, cohort: 'c1' }, T0 + 1);
        assert.equal((await findClusterQueue(s.db, 'cq-conformance'))?.cohort, 'c1');
        assert.ok((await listClusterQueues(s.db)).some((q) => q.name === 'cq-conformance'));

        const fields: ProjectFields = {
          name: 'p-tenancy',
          description: AWKWARD_TEXT,
          tags: ['a', 'ü'],
          clusterQueue: 'cq-conformance',
          active: true,
          weight: 2.5,
          maxQueued: INT4_MAX,
        };
        await insertProject(s.db, fields, T0);
        const iso = new Date(T0).toISOString();
        assert.deepEqual(await findProject(s.db, 'p-tenancy'), { ...fields, createdAt: iso, updatedAt: iso });
        await updateProject(s.db, { ...fields, active: false, maxQueued: null }, T0 + 1);
        const changed = await findProject(s.db, 'p-tenancy');
        assert.equal(changed?.active, false);
        assert.equal(changed?.maxQueued, null);
        const user = await insertUser(s.db, 'member', false, T0);
        await upsertMember(s.db, 'p-tenancy', user.id, 'member');
        await upsertMember(s.db, 'p-tenancy', user.id, 'owner');
        assert.equal(await findRole(s.db, 'p-tenancy', user.id), 'owner');
        assert.deepEqual(
          (await listMembers(s.db, 'p-tenancy')).map((m) => [m.user, m.role]),
          [['member', 'owner']],
        );
        assert.deepEqual(
          (await listProjects(s.db, user.id)).map((p) => p.name),
          ['p-tenancy'],
        );
        assert.equal(await deleteMember(s.db, 'p-tenancy', user.id), true);
        assert.equal(await deleteMember(s.db, 'p-tenancy', user.id), false);
        await deleteClusterQueue(s.db, 'cq-other-none');
        assert.ok(await findClusterQueue(s.db, 'cq-conformance'));
        assert.deepEqual(await projectsUsingQueue(s.db, 'cq-conformance'), ['p-tenancy']);
        assert.equal(await insertPrivilege(s.db, 'p-tenancy', 'host-network'), true);
        assert.equal(await insertPrivilege(s.db, 'p-tenancy', 'host-network'), false, 'once');
        assert.equal(await insertPrivilege(s.db, 'p-tenancy', 'devices'), true);
        assert.deepEqual(await listPrivileges(s.db, 'p-tenancy'), ['devices', 'host-network']);
        assert.equal(await deletePrivilege(s.db, 'p-tenancy', 'devices'), true);
        assert.equal(await deletePrivilege(s.db, 'p-tenancy', 'devices'), false);
        await upsertMember(s.db, 'p-tenancy', user.id, 'viewer');
        await deleteProject(s.db, 'p-tenancy');
        assert.equal(await findProject(s.db, 'p-tenancy'), undefined);
        assert.deepEqual(await listMembers(s.db, 'p-tenancy'), [], 'its members go with it');
        assert.deepEqual(
          (await listAllPrivileges(s.db)).filter((r) => r.project === 'p-tenancy'),
          [],
          'and its privileges',
        );
        await deleteClusterQueue(s.db, 'cq-conformance');
        assert.equal(await findClusterQueue(s.db, 'cq-conformance'), undefined);
      });

      it('keeps the largest maxQueued the API and the service accept (MAX_QUEUED_LIMIT)', async () => {
        const s = store();
        const fields: ProjectFields = {
          name: 'p-max-queued',
          description: '',
          tags: [],
          clusterQueue: 'default',
          active: true,
          weight: 1,
          maxQueued: MAX_QUEUED_LIMIT,
        };
        await insertProject(s.db, fields, T0);
        assert.equal((await findProject(s.db, fields.name))?.maxQueued, MAX_QUEUED_LIMIT);
      });
    });

    describe('audit and usage', () => {
      it('pages the audit log newest first, filtered', async () => {
        const s = store();
        const row = (n: number, fields: Partial<AuditRecord> = {}): AuditRecord => ({
          at: T0 + n,
          actor: 'auditor',
          actorKind: 'user',
          address: '127.0.0.1',
          action: 'job.submit',
          subject: `job/${n}`,
          project: 'p-audit',
          detail: { n, text: AWKWARD_TEXT },
          ...fields,
        });
        await insertAudit(s.db, [row(1), row(2)]);
        await insertAudit(s.db, [row(3, { project: null, address: null }), row(4)], true);
        const all = await listAudit(s.db, { actor: 'auditor', limit: 10 });
        assert.deepEqual(
          all.map((e) => e.subject),
          ['job/4', 'job/3', 'job/2', 'job/1'],
        );
        assert.deepEqual(all[1], {
          id: all[1]!.id,
          at: new Date(T0 + 3).toISOString(),
          actor: 'auditor',
          actorKind: 'user',
          address: null,
          action: 'job.submit',
          subject: 'job/3',
          project: null,
          detail: { n: 3, text: AWKWARD_TEXT },
        });
        const page = await listAudit(s.db, { actor: 'auditor', before: all[1].id, limit: 1 });
        assert.deepEqual(
          page.map((e) => e.subject),
          ['job/2'],
        );
        const within = await listAudit(s.db, { project: 'p-audit', since: T0 + 2, until: T0 + 4, limit: 10 });
        assert.deepEqual(
          within.map((e) => e.subject),
          ['job/2'],
        );
        // The oldest rows before the cut-off go, in id order, up to the limit.
        assert.equal(await retention.deleteOldAudit(s.db, T0 + 3, 1), 1);
        assert.equal(await retention.deleteOldAudit(s.db, T0 + 3, 10), 1);
        assert.equal(await retention.deleteOldAudit(s.db, T0 + 3, 10), 0);
        const left = await listAudit(s.db, { actor: 'auditor', limit: 10 });
        assert.deepEqual(
          left.map((e) => e.subject),
          ['job/4', 'job/3'],
        );
      });

      it('records allocations in the ledger once, and sums them from the rollups', async () => {
        const s = store();
        const [job] = await inserted(s, [newJob('p-usage', 'u')]);
        const base = Date.UTC(2026, 0, 5);
        const allocation = (attempt: number, fields: Partial<Allocation> = {}): Allocation => ({
          jobId: job!.id,
          attempt,
          project: 'p-usage',
          name: AWKWARD_TEXT,
          user: 'alice',
          queue: 'default',
          target: 'local',
          workerId: null,
          workers: 1,
          requests: { cpu: '2' },
          queuedAt: base,
          admittedAt: base + 1000,
          startedAt: base + 2000,
          endedAt: base + 2 * HOUR,
          outcome: 'succeeded',
          final: true,
          ...fields,
        });
        const first = allocation(1, { outcome: 'requeued', final: false, endedAt: base + HOUR / 2 });
        await recordAllocation(s.db, first, { cpu: 2000 });
        const second = allocation(2);
        await recordAllocation(s.db, second, { cpu: 2000 });
        assert.deepEqual(await listAllocations(s.db, job!.id), [first, second]);
        await assert.rejects(
          s.transaction((tx) => recordAllocation(tx, second, { cpu: 2000 })),
          'an allocation is recorded once',
        );
        const [sums] = await sumUsage(s.db, {
          since: base,
          until: base + 24 * HOUR,
          by: 'project',
          projects: ['p-usage'],
        });
        assert.equal(sums?.key, 'p-usage');
        assert.equal(sums?.allocations, 2);
        assert.equal(sums?.succeeded, 1);
        assert.equal(sums?.requeued, 1);
        assert.equal(sums?.waitCount, 2);
        assert.equal(sums?.waitMsSum, 2000);
        assert.equal(sums?.waitMsMax, 1000);
        const w = await insertWorker(s.db, { jobId: job!.id, factory: 'local', target: 'local' }, T0);
        const [other] = await inserted(s, [newJob('p-usage', 'other')]);
        await recordAllocation(
          s.db,
          allocation(1, { jobId: other!.id, workerId: w, endedAt: base + 3 * HOUR }),
          {
            cpu: 1000,
          },
        );
        assert.equal((await workersOfLastAllocations(s.db, [job!.id, other!.id])).get(other!.id)?.id, w);
        assert.equal((await workersOfLastAllocations(s.db, [job!.id])).size, 0, 'none recorded for it');
        const runs = await recentRuns(s.db, 2);
        assert.deepEqual(
          runs.map((r) => r.ms),
          [2 * HOUR - 2000, 3 * HOUR - 2000],
          'oldest first',
        );
        assert.equal(await retention.deleteOldAllocations(s.db, base + HOUR, 10), 1);
        assert.deepEqual(await listAllocations(s.db, job!.id), [second]);
        const [kept] = await sumUsage(s.db, {
          since: base,
          until: base + 24 * HOUR,
          by: 'project',
          projects: ['p-usage'],
        });
        assert.equal(kept?.allocations, 3, 'the rollups keep what the ledger let go');
        assert.deepEqual(
          await sumUsage(s.db, { since: base, until: base + HOUR, by: 'user', projects: [] }),
          [],
        );
      });
    });

    describe('job arrays and retention', () => {
      it('inserts an array as tasks with consecutive indices, its key guarding the whole array', async () => {
        const s = store();
        const indices = Array.from({ length: 1205 }, (_, i) => i * 2);
        const tasks = await s.transaction((tx) =>
          insertArrayTasks(tx, newJob('p-array', 'arr', { idempotencyKey: 'array-key' }), indices, T0),
        );
        assert.ok(tasks);
        assert.equal(tasks.length, indices.length);
        const arrayId = tasks[0]!.id;
        assert.deepEqual(
          tasks.map((t) => t.arrayIndex),
          indices,
        );
        assert.ok(tasks.every((t) => t.arrayId === arrayId));
        for (const k of [0, 1, 1000, 1204]) assert.deepEqual(await findJob(s.db, tasks[k]!.id), tasks[k]);
        assert.equal(await findArrayTaskId(s.db, arrayId, 2408), tasks[1204]!.id);
        assert.equal(await findArrayTaskId(s.db, arrayId, 1), undefined);
        await updateJob(s.db, tasks[3]!.id, { state: 'running' });
        const counts = (await countArrayTasks(s.db, [arrayId])).get(arrayId)!;
        assert.equal(counts.queued, 1204);
        assert.equal(counts.running, 1);
        assert.equal(counts.succeeded, 0);
        assert.equal((await queuedArrayTaskIds(s.db, arrayId)).length, 1204);
        await updateJob(s.db, tasks[4]!.id, { state: 'failed' });
        const unfinished = await unfinishedArrayTaskIds(s.db, arrayId);
        assert.deepEqual(
          unfinished,
          ids(tasks).filter((id) => id !== tasks[4]!.id),
        );
        await requestArrayCancel(s.db, arrayId);
        assert.equal((await findJob(s.db, tasks[3]!.id))?.cancelRequested, true);
        assert.equal(
          (await findJob(s.db, tasks[4]!.id))?.cancelRequested,
          false,
          'an ended task is left alone',
        );
        const collapsed = await listJobs(s.db, { project: 'p-array', sort: 'id', limit: 10, collapse: true });
        assert.deepEqual(ids(collapsed), [arrayId], 'an array lists as its first task');
        const again = await s.transaction((tx) =>
          insertArrayTasks(tx, newJob('p-array', 'arr', { idempotencyKey: 'array-key' }), [0, 1], T0),
        );
        assert.equal(again, undefined);
      });

      it('walks jobs for the sweep, removes the expired ones with their rows, and records the ranges', async () => {
        const s = store();
        const jobs = await inserted(
          s,
          ['a', 'b', 'c', 'd'].map((n) => newJob('p-retention', n)),
        );
        const [a, b, c, d] = jobs as [JobRecord, JobRecord, JobRecord, JobRecord];
        for (const j of [a, b, d])
          await updateJob(s.db, j.id, { state: 'succeeded', cleanedUp: true, finishedAt: T0 });
        await appendEvent(
          s.db,
          { subjectKind: 'job', subject: 'a', type: 't', message: 'm', jobId: a.id },
          T0,
        );
        const w = await insertWorker(s.db, { jobId: a.id, factory: 'local', target: 'local' }, T0);
        await updateWorker(s.db, w, { state: 'destroyed' }, T0);
        const swept = await retention.jobsAfter(s.db, a.id - 1, T0 + 1, 10);
        assert.deepEqual(
          swept.map((j) => [j.id, j.expired]),
          [
            [a.id, true],
            [b.id, true],
            [c.id, false],
            [d.id, true],
          ],
        );
        assert.deepEqual(swept[0], { id: a.id, expired: true, finishedAt: T0, createdAt: T0 });
        assert.equal(
          (await retention.jobsAfter(s.db, a.id - 1, T0, 10))[0]!.expired,
          false,
          'the cut-off is exclusive',
        );
        assert.equal(
          await retention.deleteJobs(s.db, [a.id, b.id, c.id], T0 + 1),
          2,
          'an unfinished job stays',
        );
        assert.deepEqual(ids(await findJobs(s.db, [a.id, b.id, c.id])), [c.id]);
        assert.deepEqual(await listJobEvents(s.db, a.id), []);
        assert.deepEqual(
          (await listWorkers(s.db)).filter((x) => x.id === w),
          [],
        );
        await retention.recordRemoved(
          s.db,
          { firstId: a.id, lastId: b.id, endedFrom: T0, endedTo: T0, retentionSeconds: 60 },
          T0,
        );
        assert.equal(await retention.deleteJobs(s.db, [d.id], T0 + 1), 1);
        await retention.recordRemoved(
          s.db,
          { firstId: d.id, lastId: d.id, endedFrom: T0 + 5, endedTo: T0 + 5, retentionSeconds: 60 },
          T0,
        );
        assert.deepEqual(await retention.removedRangeOf(s.db, b.id), {
          firstId: a.id,
          lastId: b.id,
          endedFrom: T0,
          endedTo: T0,
          retentionSeconds: 60,
        });
        assert.equal(
          await retention.removedRangeOf(s.db, c.id),
          undefined,
          'not merged across a job that remains',
        );
        await updateJob(s.db, c.id, { state: 'succeeded', cleanedUp: true, finishedAt: T0 });
        assert.equal(await retention.deleteJobs(s.db, [c.id], T0 + 1), 1);
        await retention.recordRemoved(
          s.db,
          { firstId: c.id, lastId: c.id, endedFrom: T0, endedTo: T0, retentionSeconds: 60 },
          T0,
        );
        assert.deepEqual(await retention.removedRangeOf(s.db, c.id), {
          firstId: a.id,
          lastId: d.id,
          endedFrom: T0,
          endedTo: T0 + 5,
          retentionSeconds: 60,
        });
      });
    });
  });
}

/** An event input's fields as its view shows them. */
function pick(e: { type: string; message: string; subjectKind: string; subject: string }) {
  return { type: e.type, message: e.message, subjectKind: e.subjectKind, subject: e.subject };
}
