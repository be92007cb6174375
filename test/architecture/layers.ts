/**
 * The layering check: docs/ARCHITECTURE.md's layout table says which part of the code may import
 * which; this reads that table and every import under src/ and web/src/, and lists what breaks
 * it. The table is the rule itself, so the document cannot drift from the code unnoticed.
 *
 * A "part" is a folder under src/ (`src/controller/` → `controller`), a file directly under src/
 * (`src/version.ts` → `version`), or `web`. Type-only imports count: a type ties two parts as
 * firmly as a value.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/** Part → the parts it may import. */
export type Layers = Map<string, Set<string>>;

export interface Import {
  /** Repository-relative path of the importing file. */
  file: string;
  /** The specifier as written. */
  specifier: string;
  from: string;
  to: string;
}

/**
 * The layout table: a Markdown table whose header has a `folder` and a `may use` column. A row's
 * part is the first backticked path in its folder cell; its `may use` cell lists backticked part
 * names, or says `nothing`.
 */
export function parseLayers(markdown: string): Layers {
  const lines = markdown.split('\n');
  const header = lines.findIndex((l) => /^\|\s*folder\s*\|/.test(l) && /may use/.test(l));
  if (header < 0) throw new Error('no layout table (a "| folder | … | may use |" header) in the document');
  const cells = (l: string) =>
    l
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
  const mayUse = cells(lines[header]!).findIndex((c) => c === 'may use');
  const layers: Layers = new Map();
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const row = cells(line);
    const path = /`([^`]+)`/.exec(row[0] ?? '')?.[1];
    if (!path) throw new Error(`layout table: no backticked path in row ${line}`);
    const uses = row[mayUse] ?? '';
    const names = [...uses.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    if (names.length === 0 && !/^nothing\b/.test(uses))
      throw new Error(`layout table: "${path}" must list what it may use, or say nothing`);
    layers.set(partOfPath(path), new Set(names));
  }
  for (const [part, uses] of layers)
    for (const u of uses)
      if (!layers.has(u)) throw new Error(`layout table: "${part}" may use "${u}", which has no row`);
  return layers;
}

/** `src/controller/`, `src/controller/x.ts` → `controller`; `src/version.ts` → `version`; `web/…` → `web`. */
export function partOfPath(path: string): string {
  const parts = path.replace(/\\/g, '/').replace(/\/$/, '').split('/');
  if (parts[0] === 'web') return 'web';
  if (parts[0] !== 'src' || parts.length < 2) throw new Error(`${path} is neither under src/ nor web/`);
  return parts.length === 2 ? parts[1]!.replace(/\.(tsx?|js)$/, '') : parts[1]!;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every relative import between two parts, read with TypeScript's own pre-processor. */
export function readImports(root: string): Import[] {
  const out: Import[] = [];
  for (const abs of [...sources(join(root, 'src')), ...sources(join(root, 'web', 'src'))]) {
    const file = relative(root, abs).split(sep).join('/');
    const info = ts.preProcessFile(readFileSync(abs, 'utf8'), true, true);
    for (const { fileName: specifier } of info.importedFiles) {
      if (!specifier.startsWith('.')) continue;
      const target = relative(root, resolve(dirname(abs), specifier))
        .split(sep)
        .join('/');
      const from = partOfPath(file);
      const to = partOfPath(target);
      if (from !== to) out.push({ file, specifier, from, to });
    }
  }
  return out;
}

/** One line per import the table does not allow, and per part the table does not name. */
export function violations(layers: Layers, imports: Import[]): string[] {
  const out: string[] = [];
  const unnamed = new Set<string>();
  for (const i of imports) {
    for (const part of [i.from, i.to]) if (!layers.has(part)) unnamed.add(part);
    const allowed = layers.get(i.from);
    if (allowed && layers.has(i.to) && !allowed.has(i.to))
      out.push(`${i.file} imports ${i.specifier}: ${i.from} may not use ${i.to}`);
  }
  for (const part of unnamed) out.push(`${part} has no row in the layout table`);
  return out;
}

/**
 * Every file's relative imports, file to file (repository-relative paths), type-only imports
 * included: what the cycle check reads. `./x.js` is the source `./x.ts` (or `.tsx`), `./dir` its
 * `index.ts`.
 */
export function fileGraph(root: string): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  const source = (path: string): string => {
    for (const candidate of [
      path.replace(/\.js$/, '.ts'),
      path.replace(/\.js$/, '.tsx'),
      path,
      join(path, 'index.ts'),
    ])
      if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
    return path;
  };
  for (const abs of [...sources(join(root, 'src')), ...sources(join(root, 'web', 'src'))]) {
    const file = relative(root, abs).split(sep).join('/');
    const edges = new Set<string>();
    for (const { fileName: specifier } of ts.preProcessFile(readFileSync(abs, 'utf8'), true, true)
      .importedFiles)
      if (specifier.startsWith('.'))
        edges.add(
          relative(root, source(resolve(dirname(abs), specifier)))
            .split(sep)
            .join('/'),
        );
    graph.set(file, edges);
  }
  return graph;
}

/**
 * A cycle in a graph — among the parts the table allows (each may use the next), or among the
 * files (fileGraph) — or undefined.
 */
export function findCycle(layers: Layers): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (part: string): string[] | undefined => {
    if (state.get(part) === 'done') return undefined;
    if (state.get(part) === 'open') return [...path.slice(path.indexOf(part)), part];
    state.set(part, 'open');
    path.push(part);
    for (const next of layers.get(part) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(part, 'done');
    return undefined;
  };
  for (const part of layers.keys()) {
    const cycle = visit(part);
    if (cycle) return cycle;
  }
  return undefined;
}
