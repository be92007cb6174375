/**
 * The log store's contract (src/store/log-store.ts, LogStore): what the agent's uploads, the API's
 * log reads and follows, a retried job's attempts and the retention sweep rely on. Held against
 * FileLogStore (files under DATA/logs, SQLite's deployments) and PgLogStore (rows of job_logs) in
 * the same process (log-stores.test.ts), with the same assertions on the bytes each gives back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Readable } from 'node:stream';
import type { LogStore } from '../../src/store/log-store.js';

/** A fresh log store, and jobs whose logs it may keep. */
export interface OpenedLogStore {
  logs: LogStore;
  /** A job id that has no log yet; the job is unfinished (where the store looks at jobs). */
  newJob(): Promise<number>;
  dispose(): Promise<void>;
}

export interface LogStoreKind {
  name: string;
  open(): Promise<OpenedLogStore>;
  /** Why this store cannot be tested here (its suite is skipped saying so). */
  skip?: string;
}

const bytes = async (stream: Readable): Promise<Buffer> =>
  Buffer.concat((await stream.toArray()) as Buffer[]);

const utf8 = (...parts: string[]): Buffer => Buffer.concat(parts.map((p) => Buffer.from(p, 'utf8')));

export function logStoreConformance(kind: LogStoreKind): void {
  describe(`log store conformance: ${kind.name}`, { skip: kind.skip }, () => {
    let opened: OpenedLogStore;
    let logs: LogStore;
    /** A new job, and a function that appends each of `parts` to its log in turn. */
    const job = async () => {
      const id = await opened.newJob();
      return {
        id,
        /** Strings go in as their UTF-8. */
        append: async (...parts: (string | Buffer)[]) => {
          for (const p of parts) await logs.append(id, Buffer.from(p));
        },
      };
    };
    before(async () => {
      opened = await kind.open();
      logs = opened.logs;
    });
    after(async () => {
      logs?.close();
      await opened?.dispose();
    });

    it('reads back exactly the bytes appended: NUL bytes, multi-byte UTF-8, in order', async () => {
      const j = await job();
      const parts = ['plain\n', 'a\0b\0\0c', '日本', '語🚀\r\n', 'naïve ', '\u{10FFFF}end'];
      await j.append(...parts);
      assert.deepEqual(await bytes(logs.read(j.id)), utf8(...parts));
      assert.equal(await logs.sizeAfter(j.id, 0), utf8(...parts).length);
    });

    it('keeps every byte value, and a UTF-8 character split across appends, as written', async () => {
      const j = await job();
      const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      const rocket = Buffer.from('x🚀y');
      await j.append(every, rocket.subarray(0, 3), rocket.subarray(3), Buffer.from([0xff, 0xfe]));
      assert.deepEqual(
        await bytes(logs.read(j.id)),
        Buffer.concat([every, rocket, Buffer.from([0xff, 0xfe])]),
      );
    });

    it('has nothing for a job without output, and ignores an empty append', async () => {
      const j = await job();
      await j.append('');
      assert.equal(await logs.mark(j.id), 0);
      assert.equal(await logs.sizeAfter(j.id, 0), 0);
      assert.deepEqual(await bytes(logs.read(j.id)), Buffer.alloc(0));
      await j.append('one');
      const mark = await logs.mark(j.id);
      await j.append('');
      assert.equal(await logs.mark(j.id), mark, 'an empty append moves no mark');
    });

    it("reads one attempt's part between marks, and counts the bytes after a mark", async () => {
      const j = await job();
      const first = await logs.mark(j.id);
      await j.append('attempt 1\n', 'ünd more\0');
      const second = await logs.mark(j.id);
      await j.append('attempt 2\n');
      const third = await logs.mark(j.id);
      await j.append('attempt 3 🚀');
      assert.ok(first < second && second < third, 'marks rise with each append');
      assert.deepEqual(
        await bytes(logs.read(j.id, { after: first, upTo: second })),
        utf8('attempt 1\n', 'ünd more\0'),
      );
      assert.deepEqual(await bytes(logs.read(j.id, { after: second, upTo: third })), utf8('attempt 2\n'));
      assert.deepEqual(await bytes(logs.read(j.id, { after: third, upTo: null })), utf8('attempt 3 🚀'));
      assert.deepEqual(await bytes(logs.read(j.id, { after: third, upTo: third })), Buffer.alloc(0));
      assert.equal(await logs.sizeAfter(j.id, second), utf8('attempt 2\n', 'attempt 3 🚀').length);
      assert.equal(await logs.sizeAfter(j.id, await logs.mark(j.id)), 0);
    });

    it('keeps many appends and large ones whole, each job its own log', async () => {
      const [a, b] = [await job(), await job()];
      const many = Array.from({ length: 600 }, (_, i) => `line ${i} ${'é'.repeat(i % 7)}\n`);
      const large = `${'0123456789abcdef'.repeat(64 * 1024)}\0`; // 1 MiB and a NUL
      for (let i = 0; i < many.length; i++) {
        await a.append(many[i]!);
        if (i === 300) await b.append(large);
      }
      assert.deepEqual(await bytes(logs.read(a.id)), utf8(...many));
      assert.deepEqual(await bytes(logs.read(b.id)), utf8(large));
      assert.equal(await logs.sizeAfter(b.id, 0), large.length);
    });

    it('follows: the log so far, then live output, and ends once the job has ended', async () => {
      const j = await job();
      await j.append('before\0');
      let done = false;
      const follower = logs.follow(j.id, () => done)[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      const got: Buffer[] = [];
      /** Reads from the follower until it has given `want`'s bytes in all. */
      const until = async (want: Buffer) => {
        while (Buffer.concat(got).length < want.length) {
          const next = await follower.next();
          assert.ok(!next.done, 'the follower is still going');
          got.push(next.value);
        }
        assert.deepEqual(Buffer.concat(got), want);
      };
      await until(utf8('before\0'));
      await j.append('live 1 🚀\n');
      await until(utf8('before\0', 'live 1 🚀\n'));
      await j.append('last\n');
      done = true;
      logs.ended(j.id);
      for (let next = await follower.next(); !next.done; next = await follower.next()) got.push(next.value);
      assert.deepEqual(
        Buffer.concat(got),
        utf8('before\0', 'live 1 🚀\n', 'last\n'),
        'nothing left out at the end',
      );
    });

    it('follows a job that has already ended: its whole log, then the end', async () => {
      const j = await job();
      await j.append('all ', 'of it');
      assert.deepEqual(await bytes(logs.follow(j.id, () => true)), utf8('all ', 'of it'));
    });

    it('removes the logs of the jobs it is told, and only those', async () => {
      const [a, b, c] = [await job(), await job(), await job()];
      await a.append('a');
      await b.append('b');
      await c.append('c');
      await logs.discard([a.id, c.id]);
      await logs.discard([]);
      await logs.discard([a.id]);
      for (const gone of [a, c]) {
        assert.deepEqual(await bytes(logs.read(gone.id)), Buffer.alloc(0));
        assert.equal(await logs.mark(gone.id), 0);
        assert.equal(await logs.sizeAfter(gone.id, 0), 0);
      }
      assert.deepEqual(await bytes(logs.read(b.id)), utf8('b'));
      await a.append('again');
      assert.deepEqual(await bytes(logs.read(a.id)), utf8('again'), 'a removed log starts afresh');
    });

    it('ends every follower with what it has when the store closes (the last test: the store is closed)', async () => {
      const j = await job();
      await j.append('so far');
      const follower = logs.follow(j.id, () => false)[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      const first = await follower.next();
      assert.deepEqual(first.value, utf8('so far'));
      logs.close();
      assert.equal((await follower.next()).done, true);
    });
  });
}
