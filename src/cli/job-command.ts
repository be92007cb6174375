/**
 * What the commands that reach inside a running job share (`berth exec`, `berth port-forward`):
 * the job argument, `--rank` and `--project`, and the job's id from them.
 */
import type { Command } from 'commander';
import { jobRef, nonNegativeInteger, type JobRef } from './flags.js';
import type { Job } from './api-types.js';
import { inProject, jobPath, resolveJob } from './job-watch.js';
import { openSession, type Session } from './session.js';

/** `--rank` and `--project`, as such a command takes them. */
export interface InJobFlags {
  rank?: number;
  project?: string;
}

/** `program NAME <job>` with `--rank` and `--project`; the command's own arguments follow. */
export function inJobCommand(program: Command, name: string, description: string): Command {
  return program
    .command(name)
    .description(description)
    .argument('<job>', 'job id, or ARRAY_INDEX for a task of an array (123_7)', jobRef)
    .option('--rank <n>', 'the member of a gang job (default 0)', nonNegativeInteger)
    .option('--project <name>', 'the project the job should be in: refused, saying where it is, if not');
}

/** The session and the job's id a command of `inJobCommand` acts on. */
export async function jobOf(ref: JobRef, f: InJobFlags): Promise<{ s: Session; id: number }> {
  const s = openSession(f.project ? { project: f.project } : {});
  const id = await resolveJob(s.client, ref);
  if (f.project !== undefined) inProject(await s.client.get<Job>(jobPath(id)), f.project);
  return { s, id };
}
