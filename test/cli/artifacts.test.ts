/**
 * `berth submit --artifact` and `berth artifacts` against a real server running real jobs, as a
 * user sees them: the table, JSON, a download's bytes, and the refusals (one line, non-zero exit).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ArtifactView } from '../../src/domain/artifact.js';
import { localFactoryConfig } from '../helpers/server.js';
import { fails, ok, parseJson, row, useCliServer } from './cli.js';

let id: number;

const ctx = useCliServer(
  async ({ admin }) => {
    const out = ok(
      await admin([
        'submit',
        '--artifact',
        'results/*.csv',
        '--artifact',
        'notes.txt',
        '--wait',
        '--',
        'sh',
        '-c',
        "mkdir results && printf 'a,b\\n1,2\\n' > results/a.csv && printf 'x' > results/b.csv && echo note > notes.txt && echo no > other.txt",
      ]),
    );
    const m = /^submitted job (\d+)/m.exec(out);
    assert.ok(m, out);
    id = Number(m[1]);
    assert.match(out, new RegExp(`^job ${id} succeeded`, 'm'));
  },
  { config: localFactoryConfig() },
);
const { admin: cli } = ctx;

describe('berth artifacts', () => {
  it('lists what the job kept: name, attempt, size and age', async () => {
    const out = ok(await cli(['artifacts', String(id)]));
    const a = row(out, 'NAME', 'results/a.csv');
    assert.equal(a.ATTEMPT, '1');
    assert.equal(a.SIZE, '8 B');
    assert.match(a.CREATED ?? '', /^\d+[smhd] ago$/);
    assert.equal(row(out, 'NAME', 'results/b.csv').SIZE, '1 B');
    assert.equal(row(out, 'NAME', 'notes.txt').SIZE, '5 B');
    assert.doesNotMatch(out, /other\.txt/);

    const listed = parseJson<ArtifactView[]>(await cli(['artifacts', String(id), '-o', 'json']));
    assert.deepEqual(
      listed.map((a) => a.name),
      ['notes.txt', 'results/a.csv', 'results/b.csv'],
    );
    assert.match(listed[0]!.sha256, /^[0-9a-f]{64}$/);
  });

  it('lists every artifact, page after page, however many the job kept', async () => {
    // Two runs of 600 files each: more than one page of the API's largest (1000). The first run
    // fails (and is retried) while a marker file is missing.
    const marker = join(ctx.sb.root, 'second-run');
    const out = ok(
      await cli([
        'submit',
        '--retries',
        '1',
        '--artifact',
        'out/*',
        '--wait',
        '--',
        'sh',
        '-c',
        `mkdir out && cd out && i=0; while [ $i -lt 600 ]; do : > f$i; i=$((i+1)); done; [ -e ${marker} ] || { : > ${marker}; exit 1; }`,
      ]),
    );
    const job = /^submitted job (\d+)/m.exec(out)?.[1];
    assert.ok(job, out);
    assert.match(out, new RegExp(`^job ${job} succeeded`, 'm'));
    const listed = parseJson<ArtifactView[]>(await cli(['artifacts', job, '-o', 'json']));
    assert.equal(listed.length, 1200);
    assert.deepEqual(
      [1, 2].map((attempt) => listed.filter((a) => a.attempt === attempt).length),
      [600, 600],
    );
    assert.equal(new Set(listed.map((a) => `${a.attempt}/${a.name}`)).size, 1200, 'none twice');
  });

  it('downloads one with --get: to --out FILE, to the current directory, or to stdout', async () => {
    const file = join(ctx.sb.root, 'a-copy.csv');
    const out = ok(await cli(['artifacts', String(id), '--get', 'results/a.csv', '--out', file]));
    assert.equal(out, `saved results/a.csv (attempt 1, 8 B) to ${file}\n`);
    assert.equal(readFileSync(file, 'utf8'), 'a,b\n1,2\n');

    ok(await cli(['artifacts', String(id), '--get', 'results/b.csv']));
    assert.equal(readFileSync(join(ctx.sb.cwd, 'b.csv'), 'utf8'), 'x');

    assert.equal(ok(await cli(['artifacts', String(id), '--get', 'notes.txt', '--out', '-'])), 'note\n');
  });

  it('refuses to overwrite a file unless --force', async () => {
    const file = join(ctx.sb.root, 'taken.csv');
    writeFileSync(file, 'mine');
    fails(
      await cli(['artifacts', String(id), '--get', 'results/a.csv', '--out', file]),
      1,
      /^berth: .*taken\.csv already exists: give --force to overwrite it/,
    );
    assert.equal(readFileSync(file, 'utf8'), 'mine');
    ok(await cli(['artifacts', String(id), '--get', 'results/a.csv', '--out', file, '--force']));
    assert.equal(readFileSync(file, 'utf8'), 'a,b\n1,2\n');
  });

  it('says in one line what is wrong', async () => {
    fails(
      await cli(['artifacts', String(id), '--get', 'other.txt', '--out', join(ctx.sb.root, 'o')]),
      1,
      /^berth: job \d+ has no artifact "other\.txt"/,
    );
    fails(await cli(['artifacts', String(id), '--out', 'x']), 2, /--out and --force go with --get NAME/);
    fails(await cli(['artifacts', '999999']), 1, /^berth: job 999999 not found/);
    fails(
      await cli(['submit', '--artifact', '../up.txt', '--', 'true']),
      1,
      /^berth: artifacts: "\.\.\/up\.txt" contains "\.\."/,
    );
  });
});
