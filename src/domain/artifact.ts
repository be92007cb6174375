/**
 * Artifacts: files a job leaves behind, kept after it ends. The job names them with glob patterns
 * relative to its working directory (`results/*.csv`); its agent uploads the matching files when
 * the job's process has ended, and the server keeps them on disk until the retention passes.
 */
import { BadRequestError } from './errors.js';
import { CONTROL_CHARACTER } from './names.js';

/** The most patterns one job may give. */
export const MAX_ARTIFACT_PATTERNS = 32;
/** The longest pattern, in characters. */
export const MAX_ARTIFACT_PATTERN_LENGTH = 256;
/** The longest artifact name (a path relative to the working directory), in characters. */
export const MAX_ARTIFACT_NAME_LENGTH = 1024;
/**
 * The most files one run keeps unless `artifacts.maxFilesPerJob` says otherwise: each is a row and
 * a file on disk whatever its size, so zero-byte files would otherwise be free to a job.
 */
export const DEFAULT_MAX_ARTIFACT_FILES = 1000;

/** One kept file, as `GET /jobs/{id}/artifacts` lists it. */
export interface ArtifactView {
  /** Its path relative to the job's working directory, with `/` between directories. */
  name: string;
  /** The run of the job that uploaded it (1 for the first; a requeued job runs again). */
  attempt: number;
  /** Bytes. */
  size: number;
  /** SHA-256 of its bytes, hex. */
  sha256: string;
  /** ISO 8601. */
  createdAt: string;
}

/** Why `pattern` cannot be an artifact pattern, or undefined when it can. */
function patternProblem(pattern: string): string | undefined {
  if (pattern.trim() === '') return 'is empty';
  if (pattern.length > MAX_ARTIFACT_PATTERN_LENGTH)
    return `is longer than ${MAX_ARTIFACT_PATTERN_LENGTH} characters`;
  if (CONTROL_CHARACTER.test(pattern)) return 'contains a control character';
  if (pattern.startsWith('/') || pattern.startsWith('~') || /^[A-Za-z]:[\\/]/.test(pattern))
    return "is an absolute path: give a pattern relative to the job's working directory, e.g. results/*.csv";
  // `..` as a part of the path, also as one choice of a brace expansion (`{a,..}/x`).
  if (/(?:^|[\\/{},])\.\.(?:$|[\\/{},])/.test(pattern))
    return 'contains "..": artifacts come from inside the job\'s working directory only';
  return undefined;
}

/**
 * Checks and normalises a submission's `artifacts` (BadRequestError naming the pattern otherwise):
 * duplicates are dropped, the order kept.
 */
export function checkArtifactPatterns(patterns: readonly string[]): string[] {
  if (patterns.length > MAX_ARTIFACT_PATTERNS)
    throw new BadRequestError(`artifacts: at most ${MAX_ARTIFACT_PATTERNS} patterns, not ${patterns.length}`);
  for (const p of patterns) {
    const problem = patternProblem(p);
    if (problem) throw new BadRequestError(`artifacts: ${JSON.stringify(p)} ${problem}`);
  }
  return [...new Set(patterns)];
}

/**
 * Checks an artifact's name as an agent uploads it and a client asks for it: a relative path
 * without `.` or `..` parts or empty ones, so that it stays inside the job's artifact directory.
 */
export function checkArtifactName(name: string): string {
  const refuse = (why: string) => new BadRequestError(`artifact name ${JSON.stringify(name)} ${why}`);
  if (name === '') throw refuse('is empty');
  if (name.length > MAX_ARTIFACT_NAME_LENGTH)
    throw refuse(`is longer than ${MAX_ARTIFACT_NAME_LENGTH} characters`);
  if (CONTROL_CHARACTER.test(name)) throw refuse('contains a control character');
  if (name.includes('\\')) throw refuse('contains a backslash: separate directories with /');
  if (name.startsWith('/'))
    throw refuse("is absolute: give its path relative to the job's working directory");
  if (name.split('/').some((part) => part === '' || part === '.' || part === '..'))
    throw refuse('has an empty, "." or ".." part');
  return name;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'] as const;

/** `512 B`, `64 KiB`, `1.5 MiB`: binary units, at most one decimal. */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const text =
    unit === 0 || value >= 100 || Number.isInteger(value) ? String(Math.round(value)) : value.toFixed(1);
  return `${text.replace(/\.0$/, '')} ${BYTE_UNITS[unit]}`;
}
