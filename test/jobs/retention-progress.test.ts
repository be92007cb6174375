/**
 * A long retention sweep says how far it has come, on either store: where its walk will end is
 * found by a binary search over job ids (store/queries/retention.ts, `lastIdCreatedBefore`),
 * checked here against every cut-off among jobs with gaps between their ids; and a sweep told to
 * speak at every page says the jobs removed so far, what is left, and at its end the total.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sweepRetention } from '../../src/service/upkeep/retention.js';
import { lastIdCreatedBefore } from '../../src/store/queries/retention.js';
import { seedJob } from '../helpers/db.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const store = () => s.server.context.store;
const DAY = 86_400_000;

/** `n` ended, cleaned-up jobs created a second apart from `from`; their ids. */
async function seedEnded(n: number, from: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const { id } = await seedJob(store());
    const at = from + i * 1000;
    await store()
      .db.updateTable('jobs')
      .set({ state: 'succeeded', cleaned_up: 1, created_at: at, finished_at: at + 500 })
      .where('id', '=', id)
      .execute();
    ids.push(id);
  }
  return ids;
}

describe('a long retention sweep', () => {
  it('finds where its walk will end without a scan, whatever the gaps between ids', async () => {
    assert.equal(await lastIdCreatedBefore(store().db, Date.now()), null, 'no jobs');
    const from = Date.now() - 30 * DAY;
    const ids = await seedEnded(60, from);
    // Gaps: every third job and a run of five removed, as earlier sweeps and deletions leave them.
    const gone = new Set([...ids.filter((_, i) => i % 3 === 1), ...ids.slice(30, 35)]);
    await store()
      .db.deleteFrom('jobs')
      .where('id', 'in', [...gone])
      .execute();
    const left = await store().db.selectFrom('jobs').select(['id', 'created_at']).orderBy('id').execute();
    for (let at = from - 1000; at <= from + 61_000; at += 500) {
      const before = left.filter((j) => Number(j.created_at) < at).map((j) => Number(j.id));
      const expected = before.length === 0 ? null : Math.max(...before);
      assert.equal(
        await lastIdCreatedBefore(store().db, at),
        expected,
        `cut-off ${at - from} ms after the first`,
      );
    }
    await store().db.deleteFrom('jobs').execute();
  });

  it('says how far it has come and what it removed', async () => {
    const old = Date.now() - 30 * DAY;
    const ids = await seedEnded(300, old);
    await seedEnded(5, Date.now() - 1000); // recent: they stay, and the walk ends at them
    const lines: string[] = [];
    const swept = await sweepRetention(
      s.server.context,
      { jobs: 7 * 86_400, audit: null, ledger: null },
      { say: (line) => lines.push(line), progressEveryMs: 0 },
    );
    assert.equal(swept.jobs, ids.length);
    const progress = lines.slice(0, -1).map((line) => {
      const m =
        /^retention: removed ([\d,]+) ended jobs in \d+ s, up to job ([\d,]+)(?:; about ([\d,]+) more to look at, about .+ at this pace)?$/.exec(
          line,
        );
      assert.ok(m, line);
      const n = (t: string | undefined) => Number((t ?? '0').replaceAll(',', ''));
      return { removed: n(m[1]), reached: n(m[2]), left: n(m[3]) };
    });
    assert.ok(progress.length >= 2, lines.join('\n'));
    for (const [i, p] of progress.entries()) {
      assert.equal(p.removed, p.reached - ids[0]! + 1, `line ${i}: every job up to ${p.reached} was old`);
      assert.equal(p.left, ids.at(-1)! - p.reached, `line ${i}: what is left, up to the last old job`);
    }
    assert.match(
      lines.at(-1)!,
      /^retention: the sweep removed 300 ended jobs, 0 audit rows and 0 ledger rows in \d+ s$/,
    );
  });
});
