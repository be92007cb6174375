/**
 * Who a slurm factory's workers run their jobs as (docs/SECURITY.md, "Slurm"): a project mapped
 * to a user of the cluster runs as that user (`sbatch --uid --gid`); else, where berth submits as
 * root, each member gets a uid of the factory's range that no other live worker holds, which its
 * agent (or direct worker's script) drops to on the node; else the submitting user. The uids a
 * worker holds are recorded in its handle, and taken back from it by a restarted server.
 */
import type { UidRange } from '../../domain/uid-range.js';
import { UidPool } from '../uid-pool.js';
import type { UnixUser } from '../unix-users.js';

/** Who one worker's jobs run as, when not the user berth submits as. */
export interface WorkerIdentity {
  /** The uids its members' jobs run as, by rank (berth submits as root). */
  uids?: number[];
  /** The user of the cluster Slurm runs it as (runAs.projects). */
  user?: UnixUser;
}

/** What a job gets of the server's environment (jobs run with PATH, HOME, their locale). */
const INHERITED = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'TZ', 'TMPDIR'];
/** What a job that runs as another user than the server's gets of it: nothing of the server user's. */
const INHERITED_BY_OTHERS = ['PATH', 'LANG', 'TZ'];

/** The server's variables a worker's Slurm job inherits (sbatch --export), by who it runs as. */
export function inherited(id: WorkerIdentity): string[] {
  const others = id.uids !== undefined || id.user !== undefined;
  return (others ? INHERITED_BY_OTHERS : INHERITED).filter((k) => process.env[k] !== undefined);
}

/**
 * A job's variables for the user it runs as, when not the server's: an own uid's home and
 * temporary directory are its working directory; a mapped user's home is that user's.
 */
export function ownEnv(id: WorkerIdentity, workdir: string): Record<string, string> {
  if (id.user) return { HOME: id.user.home, USER: id.user.name, LOGNAME: id.user.name };
  if (id.uids) return { HOME: workdir, TMPDIR: workdir };
  return {};
}

export class WorkerIdentities {
  /** The uids of the range no live worker holds (when berth submits as root). */
  private readonly pool: UidPool | undefined;
  /** The uids each live worker's members hold, by worker. */
  private readonly held = new Map<number, number[]>();

  constructor(
    uids: UidRange | undefined,
    private readonly users: Map<string, UnixUser> | undefined,
  ) {
    this.pool = uids ? new UidPool(uids) : undefined;
  }

  /** Whether some workers' jobs run as another user than the server's. */
  get others(): boolean {
    return this.pool !== undefined || (this.users?.size ?? 0) > 0;
  }

  /** Who worker `workerId` (of `project`, with `members` members) runs its jobs as. */
  take(workerId: number, project: string, members: number): WorkerIdentity {
    const user = this.users?.get(project);
    if (user) return { user };
    if (!this.pool) return {};
    const uids = this.pool.takeAll(members);
    this.held.set(workerId, uids);
    return { uids };
  }

  /**
   * A worker a previous server made, taken over: the uids its handle names stay its own (none
   * goes to a new worker while it lives); those it still holds.
   */
  adopt(workerId: number, recorded: unknown): number[] | undefined {
    if (!this.pool || !Array.isArray(recorded)) return undefined;
    const mine = recorded.filter((u): u is number => typeof u === 'number' && this.pool!.reserve(u));
    if (mine.length === 0) return undefined;
    this.held.set(workerId, mine);
    return mine;
  }

  /** The worker's Slurm job has ended (or was never made): its uids may go to another worker. */
  giveBack(workerId: number): void {
    for (const uid of this.held.get(workerId) ?? []) this.pool?.give(uid);
    this.held.delete(workerId);
  }
}
