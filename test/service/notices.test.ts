/**
 * The one way a committed change is heard (service/live/notices.ts), on a real SQLite store and its
 * group commit: once its unit commits, by every subscriber, in order; never for a unit rolled
 * back; once for a batch run again; and in the transaction by the outbox, whose control message
 * is what the leader reads.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ClusterQueue } from '../../src/domain/cluster-queue.js';
import type { JobRecord } from '../../src/domain/job.js';
import { commitUnit, controlMessage, Notices, type Notice } from '../../src/service/live/notices.js';
import type { ControlMessage } from '../../src/service/live/control.js';
import { GroupCommit } from '../../src/store/group-commit.js';
import { initSetting, readSetting } from '../../src/store/queries/settings.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Db, Store } from '../../src/store/store.js';

let dir: string;
let store: Store;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-notices-'));
  store = await openSqliteStore(join(dir, 'berth.db'));
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const weight = (project: string): Notice => ({ kind: 'weight', project, weight: 2 });

/** Notices with a subscriber that records what it heard, and whether the change had landed then. */
function heard(): { notices: Notices; log: string[] } {
  const notices = new Notices();
  const log: string[] = [];
  notices.subscribe(async (n) => {
    const project = n.kind === 'weight' ? n.project : n.kind;
    log.push(`${project}:${(await readSetting(store.db, project)) ?? 'absent'}`);
  });
  return { notices, log };
}

describe('notices', () => {
  it('are heard once the unit has committed, in order, in a transaction of its own', async () => {
    const { notices, log } = heard();
    const value = await commitUnit({ store, notices }, async (tx, announce) => {
      await initSetting(tx, 'n1', 'written');
      announce(weight('n1'));
      assert.deepEqual(log, [], 'nothing is heard inside the unit');
      await initSetting(tx, 'n2', 'written');
      announce(weight('n2'));
      return 7;
    });
    assert.equal(value, 7);
    assert.deepEqual(log, ['n1:written', 'n2:written']);
  });

  it('of a unit that fails are never heard, and its error reaches the caller', async () => {
    const { notices, log } = heard();
    await assert.rejects(
      commitUnit({ store, notices }, async (tx, announce) => {
        await initSetting(tx, 'f1', 'written');
        announce(weight('f1'));
        throw new Error('refused');
      }),
      /refused/,
    );
    assert.deepEqual(log, []);
    assert.equal(await readSetting(store.db, 'f1'), undefined, 'rolled back');
  });

  it('on a group commit: a failing unit of the batch is heard of never, the others once', async () => {
    const { notices, log } = heard();
    const groupCommit = new GroupCommit(store);
    const ctx = { store, notices, groupCommit };
    const unit = (name: string, fail: boolean) =>
      commitUnit(
        ctx,
        async (tx, announce) => {
          await initSetting(tx, name, 'written');
          announce(weight(name));
          if (fail) throw new Error(`${name} refused`);
        },
        { grouped: true },
      );
    // One turn of the event loop: one batch, run again unit by unit once the middle one fails.
    const outcomes = await Promise.allSettled([unit('g1', false), unit('g2', true), unit('g3', false)]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(log.sort(), ['g1:written', 'g3:written']);
  });

  it('reach the outbox in the transaction that commits them; a failed one is never flushed', async () => {
    const sent: ControlMessage[][] = [];
    const pending = new Map<Db, ControlMessage[]>();
    const notices = new Notices();
    notices.outbox = {
      add: (tx, m) => pending.set(tx, [...(pending.get(tx) ?? []), m]),
      flush: async (tx) => {
        // Still inside: the transaction sees its own write.
        assert.equal(await readSetting(tx, 'o1'), 'written');
        sent.push(pending.get(tx) ?? []);
      },
    };
    await commitUnit({ store, notices }, async (tx, announce) => {
      await initSetting(tx, 'o1', 'written');
      announce(weight('o1'));
      announce({ kind: 'project', project: 'o1' }); // for the live streams only: no message
    });
    await assert.rejects(
      commitUnit({ store, notices }, async (tx, announce) => {
        announce(weight('o2'));
        throw new Error('refused');
      }),
    );
    assert.deepEqual(sent, [[{ kind: 'weight', project: 'o1' }]]);
  });

  it('every subscriber hears each; the first error is thrown once all have', async () => {
    const notices = new Notices();
    const log: string[] = [];
    notices.subscribe((n) => {
      log.push(`first ${n.kind === 'weight' ? n.project : ''}`);
      throw new Error('first failed');
    });
    notices.subscribe((n) => {
      log.push(`second ${n.kind === 'weight' ? n.project : ''}`);
    });
    await assert.rejects(notices.deliver([weight('a'), weight('b')]), /first failed/);
    assert.deepEqual(log, ['first a', 'second a', 'first b', 'second b']);
  });
});

describe('the control message of each notice', () => {
  const record = { id: 12, project: 'p' } as JobRecord;
  const queue = { name: 'q' } as ClusterQueue;
  const rows: [Notice, ControlMessage | undefined][] = [
    [
      { kind: 'submitted', record },
      { kind: 'submitted', id: 12 },
    ],
    [
      { kind: 'array-submitted', records: [record, { ...record, id: 13 }] },
      { kind: 'array-submitted', id: 12 },
    ],
    [
      { kind: 'cancel', id: 12, project: 'p', state: 'running', by: 'alice' },
      { kind: 'cancel', id: 12, by: 'alice' },
    ],
    [
      { kind: 'array-cancel', id: 12, by: 'alice', taskIds: [12, 13] },
      { kind: 'array-cancel', id: 12, by: 'alice' },
    ],
    [
      { kind: 'queue', name: 'q', queue },
      { kind: 'queue', name: 'q' },
    ],
    [
      { kind: 'queue', name: 'q', queue: undefined },
      { kind: 'queue', name: 'q' },
    ],
    [
      { kind: 'weight', project: 'p', weight: 3 },
      { kind: 'weight', project: 'p' },
    ],
    [
      { kind: 'access', access: { name: 'p', clusterQueue: 'q', privileges: [] } },
      { kind: 'project', project: 'p' },
    ],
    [{ kind: 'project', project: 'p' }, undefined],
    [
      { kind: 'project-deleted', project: 'p', archivedAs: 'p~deleted-1', jobIds: [12], by: 'alice' },
      { kind: 'project-deleted', project: 'p', archivedAs: 'p~deleted-1', by: 'alice' },
    ],
  ];
  for (const [notice, message] of rows)
    it(`${notice.kind}${message ? ` → ${message.kind}` : ': none (the live streams only)'}`, () => {
      assert.deepEqual(controlMessage(notice), message);
      // What goes over the bus is JSON: nothing of the notice's records rides along.
      if (message) assert.deepEqual(JSON.parse(JSON.stringify(controlMessage(notice))), message);
    });
});
