/**
 * A worker's generic resources (docs/DEVICES.md, "Slurm"): the requests of the kinds a slurm
 * factory's `gres` names, per member, as sbatch takes them (`--gres=gpu:2`). Also what tells
 * whether a pilot may run a job: only one that asks for the same.
 */
export function gresOf(
  gres: Record<string, string> | undefined,
  requests: Record<string, number> = {},
): string {
  return Object.entries(gres ?? {})
    .filter(([kind]) => (requests[kind] ?? 0) > 0)
    .map(([kind, name]) => `${name}:${Math.ceil(requests[kind]!)}`)
    .join(',');
}
