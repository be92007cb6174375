/**
 * Artifacts end to end, on the local factory with real processes over real HTTP: a job's files
 * that match its patterns are uploaded when it has run and listed and downloaded byte for byte;
 * the per-run limit keeps what fits and the log says what did not; failed and timed-out runs keep
 * theirs, cancelled ones none; a gang keeps rank 0's; outsiders see nothing; bad patterns are
 * refused at submission; the retention sweep removes rows and files.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_MAX_ARTIFACT_FILES, type ArtifactView } from '../../src/domain/artifact.js';
import { sweepArtifacts } from '../../src/service/jobs/artifacts.js';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { call, localFactoryConfig, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';
import { running as serving } from '../../src/service/context.js';

let s: TestServer;
let scratch: string;
let bob: string;

const config = [localFactoryConfig(4), 'artifacts:', '  maxBytesPerJob: 4Mi', '  retention: 1h'].join('\n');

before(async () => {
  scratch = scratchDir('berth-artifacts-');
  s = await startTestServer({ config });
  // Bob is a member of another project only.
  await call(s.api, s.adminToken, 'POST', '/projects', { name: 'elsewhere', clusterQueue: 'default' });
  bob = (await call<{ token: string }>(s.api, s.adminToken, 'POST', '/users', { name: 'bob' })).body.token;
  await call(s.api, s.adminToken, 'PUT', '/projects/elsewhere/members/bob', { role: 'member' });
});
after(async () => {
  await s.close();
  rmSync(scratch, { recursive: true, force: true });
});

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const list = async (id: number, token = s.adminToken) =>
  call<ArtifactView[]>(s.api, token, 'GET', `/jobs/${id}/artifacts`);
/** The message of an error answer. */
const message = (r: { body: unknown }): string => (r.body as { error: { message: string } }).error.message;
const logsOf = async (id: number): Promise<string> =>
  (await call(s.api, s.adminToken, 'GET', `/jobs/${id}/logs`)).text;

/** A download as raw bytes (not decoded as text). */
async function download(id: number, name: string, token = s.adminToken, query = '') {
  const res = await fetch(`${s.api}/jobs/${id}/artifacts/${name}${query}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** printf's octal escapes for `bytes`, so a job can write them exactly. */
const printfOf = (bytes: Buffer): string =>
  [...bytes].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('');

describe('artifacts of a job', () => {
  it('keeps exactly the matching regular files, with their sizes and SHA-256, and serves their bytes', async () => {
    const a = Buffer.from('a,b\n1,2\n\u0000\u00ff binary too\n', 'latin1');
    const b = Buffer.from('x\n');
    const job = await submit(s.api, s.adminToken, 'default', {
      script: [
        'mkdir -p results',
        `printf '${printfOf(a)}' > results/a.csv`,
        `printf '${printfOf(b)}' > results/b.csv`,
        'echo notes > notes.txt',
        'echo hidden > results/.c.csv',
        // Links are neither followed nor kept: not one to a file, not one to a directory.
        'ln -s /etc/hostname results/link.csv',
        'ln -s /etc linked && ln -s /etc results/dir.csv',
      ].join(' && '),
      artifacts: ['results/*.csv', 'linked/host*', 'results/dir.csv/*'],
    });
    assert.deepEqual(
      (await call<{ artifacts: string[] }>(s.api, s.adminToken, 'GET', `/jobs/${job.id}`)).body.artifacts,
      ['results/*.csv', 'linked/host*', 'results/dir.csv/*'],
    );
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'succeeded', done.reason);

    const listed = await list(job.id);
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.map(({ name, attempt, size, sha256: hash }) => ({ name, attempt, size, sha256: hash })),
      [
        { name: 'results/a.csv', attempt: 1, size: a.length, sha256: sha256(a) },
        { name: 'results/b.csv', attempt: 1, size: b.length, sha256: sha256(b) },
      ],
    );
    assert.ok(Date.parse(listed.body[0]!.createdAt) <= Date.parse(done.finishedAt!));

    const got = await download(job.id, 'results/a.csv');
    assert.equal(got.status, 200);
    assert.deepEqual(got.bytes, a);
    assert.equal(got.headers.get('content-type'), 'application/octet-stream');
    assert.match(got.headers.get('content-disposition') ?? '', /^attachment; filename="a\.csv"/);
    // The name's slash may also come percent-encoded, and a run may be named.
    assert.deepEqual((await download(job.id, 'results%2Fb.csv', s.adminToken, '?attempt=1')).bytes, b);
    assert.equal((await download(job.id, 'results/b.csv', s.adminToken, '?attempt=2')).status, 404);
    const missing = await call(s.api, s.adminToken, 'GET', `/jobs/${job.id}/artifacts/notes.txt`);
    assert.equal(missing.status, 404);
    assert.match(message(missing), /^job \d+ has no artifact "notes\.txt"/);
    assert.doesNotMatch(await logsOf(job.id), /not kept/);
  });

  it('keeps what fits in the limit per run, says in the log what did not, and leaves the outcome alone', async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      script: [
        'mkdir -p out',
        'head -c 2621440 /dev/urandom > out/1-big.bin',
        'head -c 2621440 /dev/zero > out/2-big.bin',
        'printf x > out/3-small.bin',
      ].join(' && '),
      artifacts: ['out/*'],
    });
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'succeeded', done.reason);
    assert.equal(done.exitCode, 0);
    const listed = (await list(job.id)).body;
    assert.deepEqual(
      listed.map((x) => [x.name, x.size]),
      [
        ['out/1-big.bin', 2621440],
        ['out/3-small.bin', 1],
      ],
    );
    // Larger than the API's body limit (1 MiB) both ways: streamed up and down, never buffered.
    const big = await download(job.id, 'out/1-big.bin');
    assert.equal(big.bytes.length, 2621440);
    assert.equal(sha256(big.bytes), listed[0]!.sha256);
    assert.match(
      await logsOf(job.id),
      /^berth: artifact out\/2-big\.bin not kept: over the job's limit of 4 MiB per run \(artifacts\.maxBytesPerJob\): its 2\.5 MiB would make 5 MiB$/m,
    );
  });

  it('keeps the artifacts of a failed run and of one that timed out', async () => {
    const failed = await submit(s.api, s.adminToken, 'default', {
      script: 'echo partial > partial.txt; exit 3',
      artifacts: ['partial.txt'],
    });
    const timedOut = await submit(s.api, s.adminToken, 'default', {
      script: 'echo progress > progress.txt; sleep 60',
      artifacts: ['progress.txt'],
      timeoutSeconds: 1,
    });
    const f = await waitDone(s.api, s.adminToken, failed.id);
    assert.equal(f.state, 'failed');
    assert.equal(f.exitCode, 3);
    assert.deepEqual((await download(failed.id, 'partial.txt')).bytes.toString(), 'partial\n');
    const t = await waitDone(s.api, s.adminToken, timedOut.id);
    assert.equal(t.state, 'failed');
    assert.match(t.reason, /timed out/);
    assert.deepEqual((await download(timedOut.id, 'progress.txt')).bytes.toString(), 'progress\n');
  });

  it('keeps none of a cancelled run', async () => {
    const gate = join(scratch, 'written');
    const job = await submit(s.api, s.adminToken, 'default', {
      script: `echo mine > kept.txt && touch ${gate} && sleep 60`,
      artifacts: ['kept.txt'],
    });
    await waitFor('the file to be written', () => existsSync(gate));
    await call(s.api, s.adminToken, 'POST', `/jobs/${job.id}/cancel`);
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'cancelled');
    assert.deepEqual((await list(job.id)).body, []);
  });

  it("keeps a gang's artifacts from rank 0 only", async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      // Each rank writes a file of its own name: another rank's upload would show in the list.
      script: 'echo "rank $BERTH_RANK" > rank-$BERTH_RANK.txt',
      workers: 2,
      artifacts: ['rank-*.txt'],
    });
    assert.equal((await waitDone(s.api, s.adminToken, job.id)).state, 'succeeded');
    const listed = (await list(job.id)).body;
    assert.deepEqual(
      listed.map((x) => x.name),
      ['rank-0.txt'],
    );
    assert.equal((await download(job.id, 'rank-0.txt')).bytes.toString(), 'rank 0\n');
  });
});

describe('who may read and write artifacts', () => {
  let id: number;
  before(async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      script: 'echo secret > s.txt',
      artifacts: ['s.txt'],
    });
    id = job.id;
    await waitDone(s.api, s.adminToken, id);
    assert.equal((await list(id)).body.length, 1);
  });

  it("hides another project's artifacts from its non-members (404, as the job itself)", async () => {
    const listed = await list(id, bob);
    assert.equal(listed.status, 404);
    assert.match(listed.text, /job \d+ not found/);
    const got = await download(id, 's.txt', bob);
    assert.equal(got.status, 404);
    assert.doesNotMatch(got.bytes.toString(), /secret/);
  });

  it('takes uploads from job tokens only, and checks the names they give', async () => {
    const byUser = await call(s.api, s.adminToken, 'POST', '/job/self/artifacts?name=x.txt', 'x', {
      'content-type': 'application/octet-stream',
    });
    assert.equal(byUser.status, 403);
    assert.match(byUser.text, /needs a job token/);
    // A job's own token, from inside it: a name that would leave its directory is refused, and a
    // body of no declared length is counted as it comes and refused once past the limit.
    const script = `
      const up = (name, body) =>
        fetch(process.env.BERTH_URL + '/api/v1/job/self/artifacts?name=' + encodeURIComponent(name), {
          method: 'POST', body, duplex: 'half',
          headers: { authorization: 'Bearer ' + process.env.BERTH_TOKEN, 'content-type': 'application/octet-stream' },
        }).then(async (r) => console.log(name, r.status, JSON.parse(await r.text()).error?.message ?? 'kept'));
      const chunked = (kib) => new ReadableStream({
        i: 0,
        pull(c) { if (this.i++ < kib) c.enqueue(new Uint8Array(1024)); else c.close(); },
      });
      (async () => {
        await up('../evil', 'x');
        await up('streamed-small', chunked(10));
        await up('streamed-big', chunked(4200));
      })();`;
    const job = await submit(s.api, s.adminToken, 'default', { command: [process.execPath, '-e', script] });
    assert.equal((await waitDone(s.api, s.adminToken, job.id)).state, 'succeeded');
    const log = await logsOf(job.id);
    assert.match(log, /^\.\.\/evil 400 artifact name "\.\.\/evil" has an empty, "\." or "\.\." part$/m);
    assert.match(log, /^streamed-small 201 kept$/m);
    assert.match(
      log,
      /^streamed-big 413 over the job's limit of 4 MiB per run \(artifacts\.maxBytesPerJob\): it is larger than the 4 MiB left$/m,
    );
    assert.deepEqual(
      (await list(job.id)).body.map((x) => [x.name, x.size]),
      [['streamed-small', 10240]],
    );
  });
});

describe('the number of files a run keeps', () => {
  /** The job that kept the most files a run may keep. */
  let full: number;

  it(`keeps at most ${DEFAULT_MAX_ARTIFACT_FILES} files per run by default, empty ones too; the next is refused with 413`, async () => {
    // From inside the job, with its token: empty files, so only their number can be over a limit.
    const script = `
      const up = async (name) => {
        const r = await fetch(process.env.BERTH_URL + '/api/v1/job/self/artifacts?name=' + name, {
          method: 'POST', body: new Uint8Array(0),
          headers: { authorization: 'Bearer ' + process.env.BERTH_TOKEN, 'content-type': 'application/octet-stream' },
        });
        return r.status + ' ' + (JSON.parse(await r.text()).error?.message ?? 'kept');
      };
      (async () => {
        const kept = [];
        for (let i = 0; i < ${DEFAULT_MAX_ARTIFACT_FILES}; i++) kept.push(await up('f' + i));
        console.log('first', kept.filter((k) => k === '201 kept').length, 'kept');
        console.log('one more:', await up('extra'));
        console.log('again:', await up('f0'));
      })();`;
    const job = await submit(s.api, s.adminToken, 'default', { command: [process.execPath, '-e', script] });
    assert.equal((await waitDone(s.api, s.adminToken, job.id, 120_000)).state, 'succeeded');
    const log = await logsOf(job.id);
    assert.match(log, new RegExp(`^first ${DEFAULT_MAX_ARTIFACT_FILES} kept$`, 'm'));
    assert.match(
      log,
      new RegExp(
        `^one more: 413 over the job's limit of ${DEFAULT_MAX_ARTIFACT_FILES} files per run \\(artifacts\\.maxFilesPerJob\\): it keeps ${DEFAULT_MAX_ARTIFACT_FILES} already$`,
        'm',
      ),
    );
    assert.match(log, /^again: 201 kept$/m, 'a name it keeps is replaced, not counted again');
    full = job.id;
  });

  it('lists them a page at a time: 100 by default, X-Total-Count, X-Next-Cursor until the last', async () => {
    const names = Array.from({ length: DEFAULT_MAX_ARTIFACT_FILES }, (_, i) => `f${i}`).sort();
    const first = await list(full);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(
      first.body.map((a) => a.name),
      names.slice(0, 100),
    );
    assert.equal(first.headers.get('x-total-count'), String(DEFAULT_MAX_ARTIFACT_FILES));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `?limit=300${cursor === null ? '' : `&cursor=${cursor}`}`;
      const page = await call<ArtifactView[]>(s.api, s.adminToken, 'GET', `/jobs/${full}/artifacts${query}`);
      assert.equal(page.status, 200, page.text);
      seen.push(...page.body.map((a) => a.name));
      cursor = page.headers.get('x-next-cursor');
      pages++;
    } while (cursor !== null);
    assert.equal(pages, 4);
    assert.deepEqual(seen, names, 'every artifact once, in order');

    for (const [query, expected] of [
      ['?limit=1001', /query field "limit" must be <= 1000/],
      ['?limit=0', /query field "limit" must be >= 1/],
      ['?cursor=bm90LWEtY3Vyc29y', /^cursor: not a cursor of a job's artifacts/],
    ] as const) {
      const r = await call(s.api, s.adminToken, 'GET', `/jobs/${full}/artifacts${query}`);
      assert.equal(r.status, 400, `${query}: ${r.text}`);
      assert.match(message(r), expected, query);
    }
  });
});

describe('submitting artifact patterns', () => {
  const refused = async (artifacts: unknown, expected: RegExp) => {
    const r = await call(s.api, s.adminToken, 'POST', '/projects/default/jobs', {
      command: ['true'],
      artifacts,
    });
    assert.equal(r.status, 400, r.text);
    assert.match(message(r), expected);
  };

  it('refuses absolute paths, "..", and too many or too long patterns, saying why', async () => {
    await refused(['/etc/passwd'], /^artifacts: "\/etc\/passwd" is an absolute path/);
    await refused(['results/../../x'], /^artifacts: "results\/\.\.\/\.\.\/x" contains "\.\."/);
    await refused(['{a,..}/x'], /contains "\.\."/);
    await refused(
      Array.from({ length: 33 }, (_, i) => `f${i}`),
      /"artifacts" must NOT have more than 32 items/,
    );
    await refused(['x'.repeat(257)], /"artifacts.0" must NOT have more than 256 characters/);
  });
});

describe('the retention sweep', () => {
  it('removes the rows and files of jobs that ended longer ago than the retention, and only those', async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      script: 'echo old > old.txt',
      artifacts: ['old.txt'],
    });
    // A job that kept nothing, but whose directory holds an upload cut off by a crash.
    const cut = await submit(s.api, s.adminToken, 'default', { command: ['true'] });
    await waitDone(s.api, s.adminToken, job.id);
    await waitDone(s.api, s.adminToken, cut.id);
    const running = await submit(s.api, s.adminToken, 'default', { command: ['sleep', '60'] });
    await waitFor(
      'the other job to run',
      async () => (await getJob(s.api, s.adminToken, running.id)).state === 'running',
    );
    const root = join(s.dataDir, 'artifacts');
    const leftover = (id: number) => {
      mkdirSync(join(root, String(id), '.incoming'), { recursive: true });
      writeFileSync(join(root, String(id), '.incoming', 'leftover'), 'x');
      return join(root, String(id));
    };
    const kept = join(root, String(job.id));
    assert.equal(existsSync(join(kept, '1', 'old.txt')), true);
    const cutDir = leftover(cut.id);
    const runningDir = leftover(running.id);
    writeFileSync(join(root, '999999'), '');

    const ctx = serving(s.server.context);
    assert.equal(await sweepArtifacts(ctx, Date.now()), 0, 'all within the retention (1h)');
    assert.equal((await list(job.id)).body.length, 1);
    assert.equal(existsSync(cutDir), true);

    const removed = await sweepArtifacts(ctx, Date.now() + 2 * 3_600_000);
    assert.ok(removed >= 1, `removed ${removed}`);
    assert.deepEqual((await list(job.id)).body, []);
    assert.equal(existsSync(kept), false);
    assert.equal((await download(job.id, 'old.txt')).status, 404);
    assert.equal(existsSync(cutDir), false, "an ended job's leftovers go too");
    assert.equal(existsSync(runningDir), true, 'an unfinished job keeps its directory');
    assert.equal(existsSync(join(root, '999999')), true, 'what belongs to no known job stays');
    await call(s.api, s.adminToken, 'POST', `/jobs/${running.id}/cancel`);
    await waitDone(s.api, s.adminToken, running.id);
  });
});
