/**
 * The `exec` well: admin-provided programs make and destroy instances (see CONTRACT.md).
 * `create` gets BERTH_JOB_ID, BERTH_PROJECT, BERTH_RESOURCE_ID, BERTH_RESOURCE_TYPE and prints a
 * JSON object, the instance's metadata; `destroy` gets the same plus BERTH_RESOURCE_METADATA: that
 * JSON, or `{}` when berth never learnt it (a crash during create) — destroy must then clean up
 * by BERTH_RESOURCE_ID, and must succeed when there is nothing left to clean.
 * Programs run without a shell or arguments, in baseDir, in their own process group (killed
 * whole on timeout). A program that leaves a background process holding its stdout is only done
 * when that process exits, or at the timeout.
 */
import { resolve } from 'node:path';
import { ProgramError, runProgram } from './run-program.js';
import { WellError, type InstanceRequest, type Metadata, type Well } from './well.js';

export interface ExecWellOptions {
  type: string;
  capacity: number;
  /** Program paths; relative ones resolve against baseDir, which is also their working directory. */
  create: string;
  destroy: string;
  baseDir: string;
  /** Per run; default 5 minutes. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5 * 60_000;

/** The variables a program sees besides BERTH_*: nothing of the server's own environment leaks. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' };
  for (const key of ['HOME', 'LANG'] as const) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return env;
}

/** A JSON object's values as strings: strings stay, anything else is JSON-stringified. */
export function parseMetadata(stdout: string): Metadata {
  const text = stdout.trim();
  if (text === '') throw new Error('printed nothing; it must print a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(
      `printed something that is not JSON (${JSON.stringify(text.slice(0, 80))}); it must print a JSON object`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`printed JSON that is not an object; it must print a JSON object`);
  }
  const metadata: Metadata = {};
  for (const [k, v] of Object.entries(value)) metadata[k] = typeof v === 'string' ? v : JSON.stringify(v);
  return metadata;
}

export class ExecWell implements Well {
  readonly kind = 'exec';
  readonly type: string;
  readonly capacity: number;
  readonly createProgram: string;
  readonly destroyProgram: string;

  constructor(private readonly opts: ExecWellOptions) {
    this.type = opts.type;
    this.capacity = opts.capacity;
    this.createProgram = resolve(opts.baseDir, opts.create);
    this.destroyProgram = resolve(opts.baseDir, opts.destroy);
  }

  async create(req: InstanceRequest): Promise<Metadata> {
    const stdout = await this.run('create', this.createProgram, this.env(req));
    try {
      return parseMetadata(stdout);
    } catch (e) {
      throw new WellError(`${this.describe('create', this.createProgram)} ${(e as Error).message}`, false);
    }
  }

  async destroy(req: InstanceRequest, metadata: Metadata | null): Promise<void> {
    const env = { ...this.env(req), BERTH_RESOURCE_METADATA: JSON.stringify(metadata ?? {}) };
    await this.run('destroy', this.destroyProgram, env);
  }

  async close(): Promise<void> {}

  private env(req: InstanceRequest): Record<string, string> {
    return {
      ...baseEnv(),
      BERTH_JOB_ID: String(req.jobId),
      BERTH_PROJECT: req.project,
      BERTH_RESOURCE_ID: String(req.instanceId),
      BERTH_RESOURCE_TYPE: req.type,
    };
  }

  private describe(op: string, program: string): string {
    return `exec well "${this.type}": ${op} program ${program}`;
  }

  private async run(op: string, program: string, env: Record<string, string>): Promise<string> {
    try {
      return await runProgram(program, {
        cwd: this.opts.baseDir,
        env,
        timeoutMs: this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      });
    } catch (e) {
      if (!(e instanceof ProgramError)) throw e;
      const stderr = e.stderr ? `: ${e.stderr}` : ' (nothing on stderr)';
      // A program that cannot even start will not start on a retry either.
      throw new WellError(`${this.describe(op, program)} ${e.message}${stderr}`, !e.notStarted);
    }
  }
}
