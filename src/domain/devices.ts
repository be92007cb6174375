/**
 * Devices a factory's machine has — GPUs and the like — and which job holds which, as Slurm's
 * GRES, Kubernetes' device plugins and HTCondor's assigned `request_GPUs` do (docs/DEVICES.md).
 * A device kind is a resource name (`gpu`, `nvidia.com/gpu`): a job's request of it counts
 * against quota as any request does and, on a worker of a factory that has such devices, takes
 * that many particular devices, which no other running job holds. Pure: no I/O here.
 */

/** One device: its id (what the job is told), the device files that belong to it, what is known of it. */
export interface Device {
  id: string;
  /** Its character-device files (`/dev/nvidia0`): the only ones of the kind its job may open. */
  files: string[];
  /** nvidia: `GPU-…`, what CUDA_VISIBLE_DEVICES names it by (stable whatever the order). */
  uuid?: string;
  /** nvidia: the model and its memory, for the start line and `berth targets`. */
  name?: string;
  memoryMiB?: number;
}

/** Which vendor's variables tell a job its devices of a kind. */
export type DeviceVendor = 'nvidia' | 'amd' | 'none';

/** A factory's devices of each kind. */
export interface DeviceKind {
  vendor: DeviceVendor;
  devices: Device[];
}

export type DeviceInventory = Record<string, DeviceKind>;

/** The devices of each kind one worker member holds: kind → device ids. */
export type DeviceAssignment = Record<string, string[]>;

/** The vendor a kind's name implies, when the configuration says none. */
export function vendorOf(kind: string): DeviceVendor {
  if (kind === 'gpu' || kind === 'nvidia.com/gpu') return 'nvidia';
  if (kind === 'amd.com/gpu') return 'amd';
  return 'none';
}

/** `nvidia.com/gpu` → BERTH_DEVICES_NVIDIA_COM_GPU */
export const devicesVariable = (kind: string): string =>
  `BERTH_DEVICES_${kind.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;

/**
 * What a job is told of its devices: the generic BERTH_DEVICES_<KIND> (ids, comma-separated) and
 * its vendor's own variables — for nvidia, CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES by
 * UUID where known (unambiguous whatever order the driver enumerates in), else by id.
 */
export function deviceEnv(inventory: DeviceInventory, assigned: DeviceAssignment): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [kind, ids] of Object.entries(assigned)) {
    const k = inventory[kind];
    if (!k) continue;
    env[devicesVariable(kind)] = ids.join(',');
    const byId = new Map(k.devices.map((d) => [d.id, d]));
    const names = ids.map((id) => byId.get(id)?.uuid ?? id).join(',');
    if (k.vendor === 'nvidia') {
      env.CUDA_VISIBLE_DEVICES = names;
      env.NVIDIA_VISIBLE_DEVICES = names;
    } else if (k.vendor === 'amd') {
      env.ROCR_VISIBLE_DEVICES = ids.join(',');
      env.HIP_VISIBLE_DEVICES = ids.join(',');
    }
  }
  return env;
}

/** How many devices of each kind the inventory has. */
export function deviceCounts(inventory: DeviceInventory): Record<string, number> {
  return Object.fromEntries(Object.entries(inventory).map(([kind, k]) => [kind, k.devices.length]));
}

/**
 * Of a job's requests, what it takes of each kind the inventory has: a worker member's request
 * of a kind, in whole devices (a fraction of a device is not one).
 */
export function devicesWanted(
  inventory: DeviceInventory,
  requests: Record<string, number>,
): Record<string, number> {
  const wanted: Record<string, number> = {};
  for (const kind of Object.keys(inventory)) {
    const n = requests[kind] ?? 0;
    if (n > 0) wanted[kind] = Math.ceil(n);
  }
  return wanted;
}

/**
 * Which device each holder (a worker member: `workerId/rank`) has. A device is held by one
 * holder at a time; a holder takes the free devices of lowest index in the inventory's order
 * (the order nvidia-smi or the configuration lists them), so a machine's devices fill in order.
 */
export class DeviceBook {
  /** device → holder, per kind */
  private readonly holders = new Map<string, Map<string, string>>();

  constructor(private readonly inventory: DeviceInventory) {
    for (const kind of Object.keys(inventory)) this.holders.set(kind, new Map());
  }

  /** How many devices of `kind` no one holds. */
  free(kind: string): number {
    const k = this.inventory[kind];
    return k ? k.devices.length - this.holders.get(kind)!.size : 0;
  }

  /** Gives `holder` `wanted` devices of each kind, all or none: undefined when some kind has too few free. */
  take(holder: string, wanted: Record<string, number>): DeviceAssignment | undefined {
    for (const [kind, n] of Object.entries(wanted)) if (this.free(kind) < n) return undefined;
    const assigned: DeviceAssignment = {};
    for (const [kind, n] of Object.entries(wanted)) {
      if (n <= 0) continue;
      const held = this.holders.get(kind)!;
      const ids = this.inventory[kind]!.devices.map((d) => d.id)
        .filter((id) => !held.has(id))
        .slice(0, n);
      for (const id of ids) held.set(id, holder);
      assigned[kind] = ids;
    }
    return assigned;
  }

  /** Frees every device `holder` holds. */
  release(holder: string): void {
    for (const held of this.holders.values()) for (const [id, h] of held) if (h === holder) held.delete(id);
  }

  /** The device files of `kind` that `assigned` does not hold: what its job must not open. */
  /** The device files of the devices `assigned`: what a job's own /dev holds of them. */
  ownFiles(assigned: DeviceAssignment): string[] {
    const files: string[] = [];
    for (const [kind, k] of Object.entries(this.inventory)) {
      const mine = new Set(assigned[kind] ?? []);
      for (const d of k.devices) if (mine.has(d.id)) files.push(...d.files);
    }
    return files;
  }

  /** The vendors of the kinds `assigned` holds any device of. */
  vendors(assigned: DeviceAssignment): Set<DeviceVendor> {
    return new Set(
      Object.entries(assigned)
        .filter(([, ids]) => ids.length > 0)
        .map(([kind]) => this.inventory[kind]?.vendor ?? 'none'),
    );
  }

  othersFiles(assigned: DeviceAssignment): string[] {
    const files: string[] = [];
    for (const [kind, k] of Object.entries(this.inventory)) {
      const mine = new Set(assigned[kind] ?? []);
      for (const d of k.devices) if (!mine.has(d.id)) files.push(...d.files);
    }
    return files;
  }
}

/**
 * Parses `nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits`:
 * one GPU per line (`0, GPU-8f…, NVIDIA H200, 143771`), its device file /dev/nvidiaINDEX.
 */
export function parseNvidiaSmi(csv: string): Device[] {
  const devices: Device[] = [];
  for (const line of csv.split('\n')) {
    if (line.trim() === '') continue;
    const [index, uuid, name, memory] = line.split(',').map((f) => f.trim());
    if (!index || !/^\d+$/.test(index))
      throw new Error(`nvidia-smi printed ${JSON.stringify(line)}, not a GPU`);
    const mib = Number(memory);
    devices.push({
      id: index,
      files: [`/dev/nvidia${index}`],
      ...(uuid ? { uuid } : {}),
      ...(name ? { name } : {}),
      ...(Number.isFinite(mib) && memory !== '' ? { memoryMiB: mib } : {}),
    });
  }
  return devices;
}

/** A worker's devices in words: `gpu 0, 1` for one member; `rank 0: gpu 0; rank 1: gpu 1` for a gang. */
export function devicesText(members: DeviceAssignment[]): string {
  const one = (m: DeviceAssignment) =>
    Object.entries(m)
      .map(([kind, ids]) => `${kind} ${ids.join(', ')}`)
      .join('; ');
  return members.length === 1
    ? one(members[0]!)
    : members.map((m, rank) => `rank ${rank}: ${one(m)}`).join('; ');
}
