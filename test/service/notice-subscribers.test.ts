/**
 * What this server does with each committed change (service/live/notice-subscribers.ts), in
 * process against the controller's port: a table of notices and the commands the port gets, and
 * what the live streams hear. The port here records its calls: it is the seam the services see
 * (controller/port.ts), and the controller behind it is tested through it elsewhere.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ControllerCommands, ControllerReadModel } from '../../src/controller/port.js';
import type { ClusterQueue } from '../../src/domain/cluster-queue.js';
import { ConflictError } from '../../src/domain/errors.js';
import type { JobRecord } from '../../src/domain/job.js';
import { ChangeFeed, type ChangeNotice } from '../../src/service/live/change-feed.js';
import { controllerHears, feedHears } from '../../src/service/live/notice-subscribers.js';
import type { Notice } from '../../src/service/live/notices.js';

/** A port that records each command as a line; `finished` jobs refuse a cancel, as the controller does. */
function recordingPort(finished: number[] = []) {
  const calls: string[] = [];
  const port: ControllerCommands & Pick<ControllerReadModel, 'isActive'> = {
    jobSubmitted: async (job) => void calls.push(`jobSubmitted ${job.id}`),
    cancel: async (id, by) => {
      if (finished.includes(id)) throw new ConflictError(`job ${id} has already finished`);
      calls.push(`cancel ${id} by ${by}`);
    },
    queueChanged: (name, queue) => void calls.push(`queueChanged ${name} ${queue ? 'defined' : 'deleted'}`),
    setProjectWeight: (project, weight) => void calls.push(`setProjectWeight ${project} ${weight}`),
    projectsChanged: async (projects) =>
      void calls.push(`projectsChanged ${projects.map((p) => `${p.name}@${p.clusterQueue}`).join(',')}`),
    projectDeleted: (project, archivedAs, ids) =>
      void calls.push(`projectDeleted ${project} as ${archivedAs} [${ids.join(',')}]`),
    isActive: (id) => !finished.includes(id),
  };
  return { port, calls };
}

const record = (id: number): JobRecord => ({ id, project: 'p', reason: 'waiting in q' }) as JobRecord;

const ROWS: { notice: Notice; port: string[]; feed: ChangeNotice[] }[] = [
  {
    notice: { kind: 'submitted', record: record(1) },
    port: ['jobSubmitted 1'],
    feed: [{ kind: 'job', id: 1, project: 'p', state: 'queued', reason: 'waiting in q' }],
  },
  {
    notice: { kind: 'array-submitted', records: [record(2), record(3)] },
    port: ['jobSubmitted 2', 'jobSubmitted 3'],
    feed: [{ kind: 'job', id: 2, project: 'p', state: 'queued', reason: 'waiting in q' }],
  },
  {
    notice: { kind: 'cancel', id: 4, project: 'p', state: 'running', by: 'alice' },
    port: ['cancel 4 by alice'],
    feed: [{ kind: 'job', id: 4, project: 'p', state: 'running', reason: 'cancelled by alice' }],
  },
  {
    // The last task first: those waiting under the throttle go before those in play.
    notice: { kind: 'array-cancel', id: 5, by: 'bob', taskIds: [5, 6, 7] },
    port: ['cancel 7 by bob', 'cancel 6 by bob', 'cancel 5 by bob'],
    feed: [],
  },
  {
    notice: { kind: 'queue', name: 'q', queue: { name: 'q' } as ClusterQueue },
    port: ['queueChanged q defined'],
    feed: [{ kind: 'queue', name: 'q' }],
  },
  {
    notice: { kind: 'queue', name: 'q', queue: undefined },
    port: ['queueChanged q deleted'],
    feed: [{ kind: 'queue', name: 'q' }],
  },
  {
    notice: { kind: 'weight', project: 'p', weight: 3 },
    port: ['setProjectWeight p 3'],
    feed: [],
  },
  {
    notice: { kind: 'access', access: { name: 'p', clusterQueue: 'q2', privileges: ['gpu'] } },
    port: ['projectsChanged p@q2'],
    feed: [{ kind: 'project', name: 'p' }],
  },
  { notice: { kind: 'project', project: 'p' }, port: [], feed: [{ kind: 'project', name: 'p' }] },
  {
    // Archived first, then its jobs cancelled in the order they were submitted.
    notice: { kind: 'project-deleted', project: 'p', archivedAs: 'p~deleted-9', jobIds: [8, 9], by: 'carol' },
    port: ['projectDeleted p as p~deleted-9 [8,9]', 'cancel 8 by carol', 'cancel 9 by carol'],
    feed: [{ kind: 'project', name: 'p' }],
  },
];

describe('what the controller port and the live streams hear of each notice', () => {
  for (const row of ROWS)
    it(`${row.notice.kind}${row.port.length ? `: ${row.port.join('; ')}` : ''}`, async () => {
      const { port, calls } = recordingPort();
      await controllerHears(() => port)(row.notice);
      assert.deepEqual(calls, row.port);
      const feed = new ChangeFeed();
      const heard: ChangeNotice[] = [];
      feed.subscribe((n) => void heard.push(n));
      await feedHears(feed)(row.notice);
      assert.deepEqual(heard, row.feed);
    });

  it("a cancel of a job that ended meanwhile reaches the caller; a deleted project's ended jobs are passed over", async () => {
    const { port, calls } = recordingPort([4, 8]);
    await assert.rejects(
      async () =>
        controllerHears(() => port)({ kind: 'cancel', id: 4, project: 'p', state: 'running', by: 'alice' }),
      ConflictError,
    );
    await controllerHears(() => port)({
      kind: 'project-deleted',
      project: 'p',
      archivedAs: 'p~deleted-9',
      jobIds: [8, 9],
      by: 'carol',
    });
    assert.deepEqual(calls, ['projectDeleted p as p~deleted-9 [8,9]', 'cancel 9 by carol']);
  });

  it('asks for the port when a notice comes: a new leader hears what follows', async () => {
    const first = recordingPort();
    const second = recordingPort();
    let current = first.port;
    const hears = controllerHears(() => current);
    await hears({ kind: 'weight', project: 'a', weight: 2 });
    current = second.port;
    await hears({ kind: 'weight', project: 'b', weight: 3 });
    assert.deepEqual([first.calls, second.calls], [['setProjectWeight a 2'], ['setProjectWeight b 3']]);
  });
});
