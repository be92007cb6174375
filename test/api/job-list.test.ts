/**
 * `GET /projects/{name}/jobs` a page at a time: every order, with and without a state filter,
 * pages through every job exactly once and in order (ties by newest); X-Total-Count counts the
 * filter's jobs on every page; X-Next-Cursor is absent on the last; bad input is a 400.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { JOB_STATES, type JobState } from '../../src/domain/job.js';
import { JOB_SORTS, type JobSort } from '../../src/domain/job-order.js';
import { updateJob } from '../../src/store/queries/jobs.js';
import { seedJob } from '../helpers/db.js';
import { call, useTestServer } from '../helpers/server.js';
import { assertError } from './fixtures.js';

const PROJECT = 'pages';

interface Row {
  id: number;
  priority: number;
  state: JobState;
}

const server = useTestServer({}, async () => {
  const s = server();
  const queue = { name: 'held', quota: { cpu: '100' }, stopPolicy: 'Hold' };
  assert.equal((await call(s.api, s.adminToken, 'POST', '/cluster-queues', queue)).status, 201);
  const project = { name: PROJECT, clusterQueue: 'held' };
  assert.equal((await call(s.api, s.adminToken, 'POST', '/projects', project)).status, 201);
});

/** What the list should answer: computed here, independently of the server's code. */
function expected(all: Row[], sort: JobSort, states: JobState[]): number[] {
  const rows = all.filter((r) => states.length === 0 || states.includes(r.state));
  const key = (r: Row) => (sort === '-id' || sort === 'id' ? 0 : r.priority);
  const keyDir = sort === '-priority' ? -1 : 1;
  const idDir = sort === 'id' ? 1 : -1;
  rows.sort((a, b) => keyDir * (key(a) - key(b)) || idDir * (a.id - b.id));
  return rows.map((r) => r.id);
}

interface Page {
  status: number;
  ids: number[];
  total: string | null;
  next: string | null;
  body: unknown;
}

async function page(query: Record<string, string>): Promise<Page> {
  const s = server();
  const res = await fetch(`${s.api}/projects/${PROJECT}/jobs?${new URLSearchParams(query).toString()}`, {
    headers: { authorization: `Bearer ${s.adminToken}` },
  });
  const body = await res.json();
  return {
    status: res.status,
    ids: Array.isArray(body) ? (body as { id: number }[]).map((j) => j.id) : [],
    total: res.headers.get('x-total-count'),
    next: res.headers.get('x-next-cursor'),
    body,
  };
}

/** Every page of one listing, following X-Next-Cursor. */
async function pageThrough(sort: JobSort, states: JobState[], limit: number): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  do {
    const query: Record<string, string> = { sort, limit: String(limit) };
    if (states.length > 0) query.state = states.join(',');
    if (cursor !== null) query.cursor = cursor;
    const p = await page(query);
    assert.equal(p.status, 200, JSON.stringify(p.body));
    pages.push(p);
    cursor = p.next;
    assert.ok(pages.length < 1000, 'the cursor does not advance');
  } while (cursor !== null);
  return pages;
}

describe('paging', () => {
  const rows: Row[] = [];
  before(async () => {
    // Rows straight into the store: many jobs, few priorities (so, many ties), every state.
    const store = server().server.context.store;
    const { db } = store;
    const priorities = [0, 0, 0, 5, -3, 10, 0, 5];
    for (let i = 0; i < 120; i++) {
      const row = await seedJob(store, {
        project: PROJECT,
        name: `j${i}`,
        clusterQueue: 'held',
        priority: priorities[i % priorities.length]!,
      });
      const state = JOB_STATES[(i * 7) % JOB_STATES.length]!;
      if (state !== 'queued') await updateJob(db, Number(row.id), { state });
      rows.push({ id: Number(row.id), priority: row.priority, state });
    }
  });

  for (const sort of JOB_SORTS) {
    it(`sort=${sort} returns every job exactly once, in order, whatever the filter and page size`, async () => {
      for (const states of [[], ['queued'], ['succeeded', 'failed', 'running']] as JobState[][]) {
        const want = expected(rows, sort, states);
        for (const limit of [1, 7, 50, 1000]) {
          const label = `sort=${sort} state=${states.join(',')} limit=${limit}`;
          const pages = await pageThrough(sort, states, limit);
          assert.deepEqual(
            pages.flatMap((p) => p.ids),
            want,
            label,
          );
          for (const p of pages) assert.equal(p.total, String(want.length), label);
          assert.equal(pages.length, Math.max(1, Math.ceil(want.length / limit)), label);
          assert.ok(
            pages.slice(0, -1).every((p) => p.ids.length === limit),
            label,
          );
        }
      }
    });
  }

  it('sorts by newest first without a sort, and keeps before= for the default order', async () => {
    const newest = expected(rows, '-id', []);
    assert.deepEqual((await page({ limit: '5' })).ids, newest.slice(0, 5));
    assert.deepEqual((await page({ limit: '5', before: String(newest[4]) })).ids, newest.slice(5, 10));
  });

  it('counts jobs as their state changes', async () => {
    const queued = rows.filter((r) => r.state === 'queued');
    const before = await page({ state: 'queued,cancelled', limit: '1' });
    const job = queued[0]!;
    await updateJob(server().server.context.store.db, job.id, { state: 'cancelled' });
    assert.equal((await page({ state: 'queued', limit: '1' })).total, String(queued.length - 1));
    assert.equal((await page({ state: 'queued,cancelled', limit: '1' })).total, before.total);
    await updateJob(server().server.context.store.db, job.id, { state: 'queued' });
    assert.equal((await page({ state: 'queued', limit: '1' })).total, String(queued.length));
  });
});

describe('bad paging input is a 400 with a message', () => {
  const get = (query: string) =>
    call(server().api, server().adminToken, 'GET', `/projects/${PROJECT}/jobs?${query}`);

  it('an unknown sort', async () => {
    assertError(await get('sort=name'), 400, 'bad_request', /sort.*one of -id, id, -priority, priority/);
  });

  it('a cursor this server never made', async () => {
    for (const cursor of ['garbage', 'eyJ4IjoxfQ', Buffer.from('["-id",1]').toString('base64url'), '']) {
      assertError(await get(`cursor=${cursor}`), 400, 'bad_request', /cursor/, cursor);
    }
  });

  it('a cursor of another order', async () => {
    const first = await page({ sort: 'priority', limit: '2' });
    assert.ok(first.next);
    assertError(
      await get(`sort=-id&cursor=${first.next}`),
      400,
      'bad_request',
      /cursor: it continues a list sorted by priority, not -id/,
    );
  });

  it('before with another order or a cursor', async () => {
    assertError(await get('sort=priority&before=10'), 400, 'bad_request', /before/);
    const first = await page({ limit: '2' });
    assertError(await get(`before=10&cursor=${first.next}`), 400, 'bad_request', /before/);
  });
});
