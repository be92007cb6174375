/** `berth agent`: run one worker's agent on this machine (started by a factory, e.g. slurm's). */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { DEFAULT_TMP_BYTES } from '../../domain/private-tmp.js';
import { parseAmount } from '../../domain/quantity.js';
import { CliError } from '../errors.js';
import { hostname } from 'node:os';
import { integer, nonNegativeInteger } from '../flags.js';
import { readTrustFile } from '../trust-file.js';
import { DEFAULT_NODE_IMAGE_CACHE } from '../../domain/image.js';

export function registerAgentCommand(program: Command): void {
  program
    .command('agent')
    .description(
      "run one worker's agent here: register with the server, run the job and report how it ended — on a pilot worker, each job the server hands it (factories start it; the one-time credential comes in $BERTH_AGENT_CREDENTIAL)",
    )
    .requiredOption('--server <url>', "the server's URL as this machine reaches it")
    .requiredOption('--worker <id>', 'the worker this agent runs', integer)
    .option(
      '--work-root <dir>',
      "where the job's working directory is made (default: the system's temporary directory)",
    )
    .option(
      '--rank <n>',
      'which member of a gang job this agent runs (default: $SLURM_PROCID under srun, else 0)',
      nonNegativeInteger,
    )
    .option(
      '--host <name>',
      "the name the gang's other members reach this machine by, in their BERTH_HOSTS (default: $SLURMD_NODENAME under Slurm, else this machine's host name)",
    )
    .option(
      '--run-as <uids>',
      'run each job as this uid (gid the same number), one per gang member by rank, comma-separated; the agent must be root, and ends every process of the uid before and after each job (factories pass it: docs/SECURITY.md)',
      uidList,
    )
    .addOption(
      new Option(
        '--namespaces <mode>',
        'each job in namespaces of its own — its own /tmp, /dev/shm, /dev and process view, and nothing of it outlives it (docs/SECURITY.md): auto (where the agent is root and bubblewrap runs), required, or off',
      )
        .choices(['auto', 'required', 'off'])
        .default('auto'),
    )
    .option('--tmp-size <size>', "the size of a job's private /tmp, and of its /dev/shm (default 1Gi)", bytes)
    .option(
      '--image-cache <dir>',
      `where this node keeps the OCI images its jobs run in, shared by every agent on it (default ${DEFAULT_NODE_IMAGE_CACHE})`,
    )
    .option(
      '--image-cache-size <size>',
      "the most the node's images may take; the least recently used that no job holds go first (default: no bound)",
      bytesOrZero,
    )
    .option(
      '--ca <file>',
      "PEM certificates to trust for the server's (a private CA, or the server's own certificate), besides Node's built-in CAs (default: $BERTH_CA)",
    )
    .action(
      async (o: {
        server: string;
        worker: number;
        workRoot?: string;
        rank?: number;
        host?: string;
        ca?: string;
        runAs?: number[];
        namespaces: 'auto' | 'required' | 'off';
        tmpSize?: number;
        imageCache?: string;
        imageCacheSize?: number;
      }) => {
        const credential = process.env.BERTH_AGENT_CREDENTIAL;
        if (!credential)
          throw new CliError(
            'BERTH_AGENT_CREDENTIAL is not set: the factory that starts the agent passes it',
          );
        delete process.env.BERTH_AGENT_CREDENTIAL; // the job's processes must not see it
        const ca = readTrustFile(o.ca, process.env.BERTH_CA);
        const { runRemoteAgent } = await import('../../agent/remote-agent.js');
        const procId = process.env.SLURM_PROCID;
        const rank = o.rank ?? (procId && /^\d+$/.test(procId) ? Number(procId) : 0);
        const host = o.host ?? (process.env.SLURMD_NODENAME || hostname());
        const uid = o.runAs?.[rank];
        if (o.runAs && uid === undefined)
          throw new CliError(`--run-as has ${o.runAs.length} uids: none for rank ${rank}`);
        if (uid !== undefined) {
          const { cannotSwitchUsers } = await import('../../agent/identity.js');
          const why = cannotSwitchUsers();
          if (why) throw new CliError(`--run-as: cannot run jobs as uid ${uid}: ${why}`);
        }
        await runRemoteAgent({
          url: o.server,
          workerId: o.worker,
          credential,
          workRoot: o.workRoot,
          rank,
          host,
          ...(uid !== undefined ? { identity: { uid, gid: uid } } : {}),
          ...(ca ? { ca } : {}),
          namespaces: { mode: o.namespaces, tmpBytes: o.tmpSize ?? DEFAULT_TMP_BYTES },
          imageCache: {
            dir: o.imageCache ?? DEFAULT_NODE_IMAGE_CACHE,
            ...(o.imageCacheSize !== undefined ? { bytes: o.imageCacheSize } : {}),
          },
        });
        // Reported: exit at once. Kept-alive connections and a heartbeat long poll still in flight
        // would hold the process (and so its Slurm job, and its slot) for seconds more.
        process.exit(0);
      },
    );
}

/** `--run-as 100000,100001`: uids of 1000 or more (not a system account's). */
function uidList(text: string): number[] {
  const uids = text.split(',').map((t) => Number(t.trim()));
  if (uids.length === 0 || uids.some((u) => !Number.isInteger(u) || u < 1000 || u > 0x7fffffff))
    throw new InvalidArgumentError('expected uids of 1000 or more, comma-separated');
  return uids;
}

/** `--tmp-size 512Mi`: a size in bytes. */
function bytes(text: string): number {
  const n = bytesOrZero(text);
  if (n > 0) return n;
  throw new InvalidArgumentError('expected a size in bytes (512Mi, 1G, or a number)');
}

/** `--image-cache-size 20Gi`: a size in bytes, 0 allowed (keep nothing no job holds). */
function bytesOrZero(text: string): number {
  try {
    return parseAmount('bytes', text);
  } catch {
    throw new InvalidArgumentError('expected a size in bytes (20Gi, 1G, or a number)');
  }
}
