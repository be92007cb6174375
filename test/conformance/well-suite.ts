/**
 * The well conformance suite: what every `Well` must do, checked on the well itself against the
 * real thing it manages (a PostgreSQL server, programs on disk, berth's token store). A new well
 * joins by giving a `WellSubject` (wells.test.ts).
 *
 * The contract (src/wells/well.ts): create returns the instance's metadata (strings only) and the
 * instance exists; destroy removes it, and succeeds again for an instance already gone; a failed
 * create is a WellError and leaves nothing once destroyed by id; `capacity` instances can live at
 * once, each its own; and a new well (after a restart) destroys what an earlier one made, also by
 * id alone when the metadata was never learnt (a crash between asking and confirming).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { WellError, type InstanceRequest, type Metadata, type Well } from '../../src/wells/well.js';

export interface WellSubject {
  kind: string;
  /** A new well of this kind, of resource type `type`, with `capacity`; same settings each call. */
  make: (type: string, capacity: number) => Well | Promise<Well>;
  /** A well of this kind whose create fails for a real reason (unreachable server, failing program). */
  failing?: (type: string) => Well | Promise<Well>;
  /** Whether the instance exists outside berth; undefined for a kind that makes nothing (semaphore). */
  exists?: (req: InstanceRequest, metadata: Metadata | null) => Promise<boolean>;
  /** Uses the instance as a job would (connects, calls the API); throws if it does not work. */
  use?: (metadata: Metadata) => Promise<void>;
  /** Metadata fields every instance has. */
  fields: string[];
  /** Cleans up what the subject set up (servers, files), after all tests. */
  close?: () => Promise<void>;
}

/** Instance ids far from any a test server would use. */
let nextId = 900_000 + Math.floor(Math.random() * 50_000);
const request = (type: string): InstanceRequest => ({
  instanceId: nextId++,
  jobId: 7,
  project: 'default',
  type,
});

export function wellConformance(subject: WellSubject): void {
  describe(`well kind ${subject.kind}: the Well contract`, () => {
    const wells: Well[] = [];
    const made = async (type = `${subject.kind}-r`, capacity = 3) => {
      const w = await subject.make(type, capacity);
      wells.push(w);
      return w;
    };
    after(async () => {
      for (const w of wells) await w.close();
      await subject.close?.();
    });
    const assertExists = async (req: InstanceRequest, metadata: Metadata | null, expected: boolean) => {
      if (subject.exists)
        assert.equal(await subject.exists(req, metadata), expected, `instance ${req.instanceId} exists`);
    };

    it('is of its kind and has the capacity it was given', async () => {
      const w = await made('cap-r', 5);
      assert.equal(w.kind, subject.kind);
      assert.equal(w.type, 'cap-r');
      assert.equal(w.capacity, 5);
    });

    it('creates an instance with its metadata, usable as a job would use it, and destroys it', async () => {
      const w = await made();
      const req = request(w.type);
      const metadata = await w.create(req);
      assert.deepEqual(Object.keys(metadata).sort(), [...subject.fields].sort());
      for (const [k, v] of Object.entries(metadata)) assert.equal(typeof v, 'string', `metadata.${k}`);
      await assertExists(req, metadata, true);
      await subject.use?.(metadata);
      await w.destroy(req, metadata);
      await assertExists(req, metadata, false);
    });

    it('destroys an instance already gone without complaint', async () => {
      const w = await made();
      const req = request(w.type);
      const metadata = await w.create(req);
      await w.destroy(req, metadata);
      await w.destroy(req, metadata);
      await w.destroy(req, null);
      await assertExists(req, metadata, false);
    });

    it('makes `capacity` instances live at once, each its own', async () => {
      const w = await made('many-r', 3);
      const reqs = [request(w.type), request(w.type), request(w.type)];
      const all = await Promise.all(reqs.map((r) => w.create(r)));
      for (const [i, r] of reqs.entries()) await assertExists(r, all[i]!, true);
      if (subject.fields.length > 0) {
        const distinct = new Set(all.map((m) => JSON.stringify(m)));
        assert.equal(distinct.size, all.length, 'no two instances share their metadata');
      }
      await Promise.all(reqs.map((r, i) => w.destroy(r, all[i]!)));
      for (const [i, r] of reqs.entries()) await assertExists(r, all[i]!, false);
    });

    it('a new well destroys what an earlier one made, with or without its metadata', async () => {
      const first = await made();
      const known = request(first.type);
      const unknown = request(first.type);
      const knownMetadata = await first.create(known);
      const unknownMetadata = await first.create(unknown); // as if the server died before recording it
      await first.close();
      const second = await made();
      await second.destroy(known, knownMetadata);
      await second.destroy(unknown, null);
      await assertExists(known, knownMetadata, false);
      await assertExists(unknown, unknownMetadata, false);
    });

    if (subject.failing) {
      const failing = subject.failing;
      it('fails to create with a WellError that says why, and leaves nothing once destroyed by id', async () => {
        const w = await failing(`${subject.kind}-bad`);
        wells.push(w);
        const req = request(w.type);
        const err = await w.create(req).then(
          () => assert.fail('create should have failed'),
          (e: unknown) => e,
        );
        assert.ok(err instanceof WellError, `a WellError, got ${String(err)}`);
        assert.equal(typeof err.retryable, 'boolean');
        assert.match(err.message, new RegExp(w.type));
        await w.destroy(req, null).catch(() => {}); // the failing side may refuse this too
        await assertExists(req, null, false);
      });
    }
  });
}
