/**
 * The names of a slurm factory's Slurm jobs, `berth-<installation>-<factory>-w<worker>`: the name
 * says which installation and worker a Slurm job belongs to, which is how a restarted server finds
 * its workers (and cancels what is no longer its own) without any record of Slurm's ids.
 */
export class WorkerNames {
  /** What every job name of this installation's factory starts with (squeue's filter). */
  readonly prefix: string;

  constructor(installationId: string, factory: string) {
    this.prefix = `berth-${installationId}-${factory}-w`;
  }

  /** Worker `workerId`'s Slurm job name. */
  of(workerId: number): string {
    return `${this.prefix}${workerId}`;
  }

  /** The worker a Slurm job name belongs to; undefined for a name that is not this factory's. */
  workerOf(name: string): number | undefined {
    if (!name.startsWith(this.prefix)) return undefined;
    const id = Number(name.slice(this.prefix.length));
    return Number.isSafeInteger(id) && id > 0 ? id : undefined;
  }
}
