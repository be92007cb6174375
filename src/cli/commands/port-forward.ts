/** `berth port-forward JOB [LOCAL:]REMOTE`: a local port that reaches a port inside a running job. */
import { InvalidArgumentError, type Command } from 'commander';
import type { AddressInfo } from 'node:net';
import type { Job } from '../api-types.js';
import type { JobRef } from '../flags.js';
import { inJobCommand, jobOf, type InJobFlags } from '../job-command.js';
import { startForward } from '../port-forward.js';
import { examples } from '../session.js';

/** `8888` or `9000:8888` (local:remote; 0 for a free local port). */
function ports(text: string): { local: number; remote: number } {
  const m = /^\s*(?:(\d+):)?(\d+)\s*$/.exec(text);
  const local = m?.[1] === undefined ? undefined : Number(m[1]);
  const remote = Number(m?.[2]);
  const valid = (n: number | undefined, min: number) => n === undefined || (n >= min && n <= 65_535);
  if (!m || !valid(remote, 1) || !valid(local, 0))
    throw new InvalidArgumentError(
      'expected REMOTE or LOCAL:REMOTE, ports from 1 to 65535 (LOCAL 0: any free)',
    );
  return { local: local ?? remote, remote };
}

export function registerPortForwardCommand(program: Command): void {
  const cmd = inJobCommand(
    program,
    'port-forward',
    "reach a port inside a running job from here — a notebook, TensorBoard — through the server, each connection on its own (the job's submitter and its project's owners; audited)",
  )
    .argument('<ports>', 'REMOTE, or LOCAL:REMOTE (LOCAL 0: any free port)', ports)
    .option('--address <host>', 'the local address to listen on', '127.0.0.1');
  examples(cmd, [
    'berth port-forward 12 8888            # then open http://127.0.0.1:8888',
    'berth port-forward 12 6006:6006',
    'berth port-forward 12 0:8888          # any free local port, printed',
  ]).action(
    async (ref: JobRef, p: { local: number; remote: number }, f: InJobFlags & { address: string }) => {
      const { s, id } = await jobOf(ref, f);
      // Found, and running, before anything listens here.
      const job = await s.client.get<Job>(`/jobs/${id}`);
      if (job.state !== 'running')
        process.stderr.write(`berth: job ${id} is ${job.state}: connections will be refused until it runs\n`);
      const server = await startForward(s.connection, {
        jobId: id,
        remote: p.remote,
        rank: f.rank ?? 0,
        host: f.address,
        local: p.local,
        log: (line) => process.stderr.write(`berth: ${line}\n`),
      });
      const { port } = server.address() as AddressInfo;
      process.stdout.write(`forwarding ${f.address}:${port} → job ${id}, port ${p.remote} (^C to stop)\n`);
      await new Promise<void>((resolve) => process.once('SIGINT', resolve));
      server.close();
    },
  );
}
