/**
 * The layering of the code, as docs/ARCHITECTURE.md's layout table states it, holds: every
 * import goes the way the table allows, every part has a row, and the table has no cycle.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  fileGraph,
  findCycle,
  parseLayers,
  partOfPath,
  readImports,
  violations,
  type Import,
} from './layers.js';
import { ROOT } from '../helpers/root.js';

const layers = parseLayers(readFileSync(join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8'));

describe('the layout table of docs/ARCHITECTURE.md', () => {
  it('names every part of src/ and the dashboard', () => {
    for (const part of [
      'domain',
      'scheduler',
      'store',
      'controller',
      'factories',
      'wells',
      'agent',
      'api',
      'cli',
      'web',
    ])
      assert.ok(layers.has(part), `no row for ${part}`);
  });

  it('allows no cycle between parts', () => {
    assert.equal(findCycle(layers)?.join(' → '), undefined);
  });

  it('leaves no cycle among the files of the code, type imports included', () => {
    const graph = fileGraph(ROOT);
    assert.ok(graph.size > 200, `only ${graph.size} files were read`);
    assert.equal(findCycle(graph)?.join(' → '), undefined);
  });

  it("keeps the controller's port and model leaves of it: what others see of it, and what its parts share, name none of its parts", () => {
    const graph = fileGraph(ROOT);
    for (const leaf of ['src/controller/port.ts', 'src/controller/model.ts']) {
      assert.ok(graph.has(leaf), `${leaf} was read`);
      assert.deepEqual(
        [...graph.get(leaf)!].filter((f) => f.startsWith('src/controller/')),
        [],
        `${leaf} imports from the controller`,
      );
    }
  });

  it('is kept by every import of the code', () => {
    const imports = readImports(ROOT);
    assert.ok(imports.length > 100, `only ${imports.length} imports between parts were read`);
    assert.deepEqual(violations(layers, imports), []);
  });
});

describe('the check itself', () => {
  const imp = (file: string, specifier: string, target: string): Import => ({
    file,
    specifier,
    from: partOfPath(file),
    to: partOfPath(target),
  });

  it('reports an import that goes the wrong way, naming the file and the rule', () => {
    const wrong = imp('src/store/queries/jobs.ts', '../../controller/port.js', 'src/controller/port.ts');
    const right = imp('src/controller/loop.ts', '../store/queries/jobs.js', 'src/store/queries/jobs.ts');
    assert.deepEqual(violations(layers, [right, wrong]), [
      'src/store/queries/jobs.ts imports ../../controller/port.js: store may not use controller',
    ]);
  });

  it('reports a part the table does not name', () => {
    const stray = imp('src/extras/x.ts', '../domain/job.js', 'src/domain/job.ts');
    assert.deepEqual(violations(layers, [stray]), ['extras has no row in the layout table']);
  });

  it('finds a cycle the table would allow, and refuses a row that uses an unknown part', () => {
    const table = (rows: string[]) =>
      ['| folder | what | may use |', '|---|---|---|', ...rows.map((r) => `| ${r} |`)].join('\n');
    const cyclic = parseLayers(table(['`src/a/` | x | `b`', '`src/b/` | y | `a`', '`src/c/` | z | nothing']));
    assert.deepEqual(findCycle(cyclic), ['a', 'b', 'a']);
    assert.throws(() => parseLayers(table(['`src/a/` | x | `zz`'])), /"a" may use "zz", which has no row/);
    assert.throws(() => parseLayers(table(['`src/a/` | x | whatever'])), /must list what it may use/);
  });

  it('finds a cycle among files, through a type import and an index', () => {
    const graph = new Map([
      ['src/a/x.ts', new Set(['src/a/y.ts'])],
      ['src/a/y.ts', new Set(['src/a/index.ts'])],
      ['src/a/index.ts', new Set(['src/a/x.ts'])],
    ]);
    assert.deepEqual(findCycle(graph), ['src/a/x.ts', 'src/a/y.ts', 'src/a/index.ts', 'src/a/x.ts']);
  });

  it('maps paths to parts', () => {
    assert.equal(partOfPath('src/controller/loop.ts'), 'controller');
    assert.equal(partOfPath('src/version.ts'), 'version');
    assert.equal(partOfPath('src/cli/'), 'cli');
    assert.equal(partOfPath('web/src/App.tsx'), 'web');
  });
});
