/** The CA file a CLI command trusts for its server (`--ca`, BERTH_CA, a context's `ca`). */
import { resolve } from 'node:path';
import { readCaFile, TrustError } from '../agent/trust.js';
import { CliError } from './errors.js';

export interface TrustFile {
  /** Absolute: saved in a context and handed to jobs, it must not depend on a working directory. */
  file: string;
  certificates: string[];
}

/** Reads `file`; a one-line CliError saying where the setting came from (`origin`) otherwise. */
export function loadTrustFile(file: string, origin: string): TrustFile {
  const absolute = resolve(file);
  try {
    return { file: absolute, certificates: readCaFile(absolute) };
  } catch (e) {
    if (e instanceof TrustError) throw new CliError(`${origin}: ${e.message}`);
    throw e;
  }
}

/** `--ca FILE`, else $BERTH_CA, else none. */
export function readTrustFile(flag: string | undefined, env: string | undefined): TrustFile | undefined {
  if (flag !== undefined) return loadTrustFile(flag, '--ca');
  return env ? loadTrustFile(env, 'BERTH_CA') : undefined;
}
