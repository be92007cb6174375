/**
 * What `berth __complete` prints, which the shell scripts (scripts.ts) read: one candidate a line,
 * `VALUE` or `VALUE<TAB>DESCRIPTION`, each already the whole word (`--project=ml`); then one
 * last line, the directive: `:files` (no candidates of ours; let the shell complete file names)
 * or `:done`.
 */
import type { Candidate, Completion } from './words.js';

export const FILES = ':files';
export const DONE = ':done';

/** Tabs and line breaks would break the format; a description is one short line. */
const clean = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** The candidates that fit what is typed, in their order, each once; then the directive. */
export function completionLines(completion: Completion, candidates: readonly Candidate[]): string[] {
  const { stem, partial, taken } = completion;
  const seen = new Set(taken);
  const lines: string[] = [];
  for (const c of candidates) {
    const value = clean(c.value);
    if (value === '' || !value.startsWith(partial) || seen.has(value)) continue;
    seen.add(value);
    const description = c.description === undefined ? '' : clean(c.description);
    lines.push(description === '' ? stem + value : `${stem}${value}\t${description}`);
  }
  lines.push(completion.wanted.type === 'files' ? FILES : DONE);
  return lines;
}
