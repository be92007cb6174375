/**
 * The per-job statements written as text once (store/queries/statement-text.ts) on the suite's
 * store: the dialect is read from the handle, an update sets exactly the columns given a value
 * (undefined leaves a column alone, null clears it), and a token is found, and deleted, as before.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findJob, updateJob } from '../../src/store/queries/jobs.js';
import { dialectOf } from '../../src/store/queries/statement-text.js';
import { deleteJobTokens, findToken, insertJobToken } from '../../src/store/queries/tokens.js';
import { hashToken, newToken } from '../../src/domain/tokens.js';
import { seedJob, storeOf } from '../helpers/db.js';
import { useTestServer } from '../helpers/server.js';

const server = useTestServer();

/** A job row the server's controller does not know (written here, not submitted): left alone. */
const aJob = async (): Promise<number> => (await seedJob(storeOf(server()))).id;

describe('statements written as text once', () => {
  it("reads the handle's dialect, in a transaction too", async () => {
    const store = storeOf(server());
    assert.equal(dialectOf(store.db), store.dialect);
    assert.equal(await store.transaction(async (tx) => dialectOf(tx)), store.dialect);
  });

  it('updates exactly the columns given a value: undefined leaves one alone, null clears it', async () => {
    const { db } = storeOf(server());
    const id = await aJob();
    await updateJob(db, id, { reason: 'first', exitCode: 7, retryAt: 123 });
    await updateJob(db, id, { reason: 'second', exitCode: undefined, retryAt: null });
    const row = await findJob(db, id);
    assert.equal(row?.reason, 'second');
    assert.equal(row?.exitCode, 7);
    assert.equal(row?.retryAt, null);
    // Nothing to set: no statement, no error.
    await updateJob(db, id, {});
    assert.equal((await findJob(db, id))?.reason, 'second');
  });

  it("finds a job's token by its hash, and deletes it with the job's other tokens", async () => {
    const { db } = storeOf(server());
    const id = await aJob();
    const token = newToken('job');
    await insertJobToken(db, token, id, 'test', Date.now());
    const found = await findToken(db, hashToken(token));
    assert.deepEqual(found, { user: null, jobId: id, expiresAt: null, scope: null, access: null });
    await deleteJobTokens(db, id);
    assert.equal(await findToken(db, hashToken(token)), undefined);
  });

  it("finds a user's token with its user", async () => {
    const s = server();
    const found = await findToken(storeOf(s).db, hashToken(s.adminToken));
    assert.equal(found?.user?.name, 'admin');
    assert.equal(found?.user?.admin, true);
    assert.equal(found?.jobId, null);
  });
});
