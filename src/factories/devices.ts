/**
 * A local factory's devices, found once at the server's start from `factories.NAME.devices`
 * (docs/DEVICES.md): counted, listed with their device files, or detected with nvidia-smi. Device
 * files must be character devices: their numbers are what the devices cgroup denies a job whose
 * device they are not (cgroups.ts). The assignment itself is pure (domain/devices.ts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import type { Config, FactoryConfig } from '../config/schema.js';
import {
  parseNvidiaSmi,
  vendorOf,
  type Device,
  type DeviceInventory,
  type DeviceVendor,
} from '../domain/devices.js';
import { ConfigError } from '../domain/errors.js';

export interface FactoryDevices {
  inventory: DeviceInventory;
  /** For the start line and `berth targets`: `gpu: 2 (0, 1)`, or what detection found. */
  summary: string;
}

/**
 * The control nodes a vendor's devices need beside their own (CUDA opens nvidiactl and nvidia-uvm
 * whichever GPU it uses; ROCm opens kfd): shared by every job given one of its devices, in the
 * job's own /dev (agent/sandbox.ts). Only those that exist on the machine.
 */
const CONTROL_FILES: Record<DeviceVendor, string[]> = {
  nvidia: ['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools', '/dev/nvidia-modeset'],
  amd: ['/dev/kfd'],
  none: [],
};

export function controlFiles(vendors: Iterable<DeviceVendor>): string[] {
  return [...vendors].flatMap((v) => CONTROL_FILES[v]).filter((f) => existsSync(f));
}

/** How long nvidia-smi may take to answer at start. */
const DETECT_TIMEOUT_MS = 15_000;

/** The query whose answer parseNvidiaSmi reads. */
export const NVIDIA_SMI_ARGS = ['--query-gpu=index,uuid,name,memory.total', '--format=csv,noheader,nounits'];

/** A factory's devices, or undefined when it has none configured. */
export function resolveDevices(name: string, f: FactoryConfig, file?: string): FactoryDevices | undefined {
  if (!f.devices || Object.keys(f.devices).length === 0) return undefined;
  const inventory: DeviceInventory = {};
  const parts: string[] = [];
  for (const [kind, spec] of Object.entries(f.devices)) {
    const key = `factories.${name}.devices.${kind}`;
    let vendor: DeviceVendor = vendorOf(kind);
    let devices: Device[];
    let note = '';
    if (Array.isArray(spec)) devices = spec.map((d) => ({ id: d.id, files: d.files ?? [] }));
    else if ('list' in spec) {
      vendor = spec.vendor;
      devices = spec.list.map((d) => ({ id: d.id, files: d.files ?? [] }));
    } else if ('count' in spec) {
      vendor = spec.vendor ?? vendor;
      devices = Array.from({ length: spec.count }, (_, i) => ({ id: String(i), files: [] }));
    } else {
      vendor = 'nvidia';
      const found = detectNvidia();
      devices = found.devices;
      note = found.note;
    }
    for (const d of devices) for (const path of d.files) checkDeviceFile(key, path, file);
    inventory[kind] = { vendor, devices };
    const models = [...new Set(devices.map((d) => d.name).filter(Boolean))].join(', ');
    const ids = devices.map((d) => d.id).join(', ');
    parts.push(
      `${kind}: ${devices.length ? `${devices.length} (${ids}${models ? `; ${models}` : ''})` : 'none'}${note}`,
    );
  }
  return { inventory, summary: parts.join('; ') };
}

/** The GPUs nvidia-smi lists, with their device files where this machine has them. */
function detectNvidia(): { devices: Device[]; note: string } {
  let out: string;
  try {
    out = execFileSync('nvidia-smi', NVIDIA_SMI_ARGS, {
      encoding: 'utf8',
      timeout: DETECT_TIMEOUT_MS,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: string };
    const why =
      err.code === 'ENOENT' ? 'nvidia-smi not found' : (err.stderr?.trim() || err.message).split('\n')[0];
    return { devices: [], note: ` — detect: nvidia found none (${why})` };
  }
  const devices = parseNvidiaSmi(out).map((d) => ({ ...d, files: d.files.filter(isCharDevice) }));
  return { devices, note: devices.length ? ' — detected by nvidia-smi' : ' — detect: nvidia found none' };
}

function isCharDevice(path: string): boolean {
  try {
    return statSync(path).isCharacterDevice();
  } catch {
    return false;
  }
}

function checkDeviceFile(key: string, path: string, file?: string): void {
  if (!path.startsWith('/'))
    throw new ConfigError(key, `${path}: a device file's path must be absolute`, file);
  if (!isCharDevice(path))
    throw new ConfigError(key, `${path}: not a character device on this machine`, file);
}

/**
 * The devices cgroup's rule for a device file (`c 195:0 rwm`): Linux's dev_t, as stat gives it,
 * holds the major number in bits 8–19 (and 32–43) and the minor in bits 0–7 (and 20–31).
 */
export function denyRule(path: string): string {
  const dev = BigInt(statSync(path).rdev);
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & 0xfffff000n);
  const minor = (dev & 0xffn) | ((dev >> 12n) & 0xfff00n);
  return `c ${major}:${minor} rwm`;
}

/** Every local factory's devices, by factory name (those with none are left out). */
export function devicesOf(config: Config, file?: string): Map<string, FactoryDevices> {
  const found = new Map<string, FactoryDevices>();
  for (const [name, f] of Object.entries(config.factories)) {
    const d = f.kind === 'local' ? resolveDevices(name, f, file) : undefined;
    if (d) found.set(name, d);
  }
  return found;
}
