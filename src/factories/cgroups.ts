/**
 * The local factory's enforcement of jobs' requests with cgroups, as Slurm's task/cgroup does: a
 * memory limit (and no swap beyond it), a CPU quota, and optionally a limit on processes. Each
 * job gets its own group, BASE/berth-<pid>-<data dir hash>/<factory>/job-<id>.worker-<id> in each
 * controller it needs, made before its process starts (which joins it before running the job's
 * command: agent/cgroups.ts) and removed when the worker is destroyed. Groups a server that died
 * left behind are removed when a local factory starts.
 */
import { readdirSync } from 'node:fs';
import { access, chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { removeCgroup, type JobCgroup } from '../agent/cgroups.js';
import type { JobIdentity } from '../agent/identity.js';
import type { CgroupsMode, Config } from '../config/schema.js';
import { ConfigError } from '../domain/errors.js';
import { formatAmount, type Amounts } from '../domain/quantity.js';
import {
  deadServerGroup,
  detectHierarchies,
  makeParents,
  removeUpTo,
  serverGroup,
  type Controller,
  type Parents,
} from './cgroup-probe.js';

export interface EnforcementOptions {
  factory: string;
  dataDir: string;
  mode: CgroupsMode;
  pidsLimit?: number;
  /** Its machine has device files to keep jobs from (devices.ts): a devices group per job. */
  devices?: boolean;
  /** The config file, for the message of an unmet `required`. */
  file?: string;
}

/** The CFS period the quota is a share of: the kernel's default, 100 ms. */
const CPU_PERIOD_US = 100_000;
/** The smallest quota the kernel accepts. */
const MIN_CPU_QUOTA_US = 1000;

const wanted = (o: EnforcementOptions): Controller[] => [
  'memory',
  'cpu',
  ...(o.pidsLimit === undefined ? [] : (['pids'] as const)),
  ...(o.devices ? (['devices'] as const) : []),
];

export class CgroupEnforcement {
  private constructor(
    private readonly opts: EnforcementOptions,
    /** The factory's parent group per usable controller; empty when enforcement is off. */
    private readonly parents: Map<Controller, string>,
    /** For the start line: what is enforced, or why not. */
    readonly summary: string,
    /** 1: a hierarchy per controller; 2: one unified hierarchy, one group per job. */
    readonly version: 1 | 2 = 1,
  ) {}

  /**
   * Finds what the machine allows and makes the factory's parent groups (removed again unless
   * `keep`). Throws a ConfigError when the mode is `required` and a wanted controller is unusable.
   */
  static open(opts: EnforcementOptions, keep = true): CgroupEnforcement {
    const off = (summary: string) => new CgroupEnforcement(opts, new Map(), summary);
    if (opts.mode === 'off') return off('requests not enforced (cgroups: off)');
    const found = detectHierarchies();
    let parents: Parents = { dirs: new Map(), refused: new Map() };
    if (found.usable) {
      const relative = join(serverGroup(opts.dataDir), opts.factory);
      parents = makeParents(found, relative, wanted(opts), keep);
    }
    const version = found.usable ? found.version : 1;
    const why = !found.usable
      ? found.why
      : parents.dirs.size === 0
        ? `no writable cgroup controllers (${list(parents.refused)})`
        : undefined;
    // On v2 a job's devices are fenced by its own /dev (namespaces), not by the cgroup.
    const missing = new Map([...parents.refused].filter(([c]) => !(version === 2 && c === 'devices')));
    if (opts.mode === 'required' && (why || missing.size > 0)) {
      throw new ConfigError(
        `factories.${opts.factory}.cgroups`,
        `required, but requests cannot be enforced on this machine: ${why ?? list(missing)}`,
        opts.file,
      );
    }
    if (why) return off(`requests not enforced: ${why}`);
    const refused = parents.refused.size ? `; not ${list(parents.refused)}` : '';
    const anyDir = [...parents.dirs.values()][0]!;
    return new CgroupEnforcement(
      opts,
      parents.dirs,
      `requests enforced by cgroup v${version} (${[...parents.dirs.keys()].join(', ')}${refused}), ` +
        `a group per job under ${anyDir}`,
      version,
    );
  }

  get enabled(): boolean {
    return this.parents.size > 0;
  }

  /** The controllers it uses, and the factory's parent group in each (for tests and operators). */
  get controllers(): ReadonlyMap<Controller, string> {
    return this.parents;
  }

  /**
   * The job's group in each controller it needs, or undefined when it needs none; a gang's
   * members (`rank`) each get their own, with the requests of one worker.
   */
  async create(
    jobId: number,
    workerId: number,
    requests: Amounts = {},
    rank?: number,
    owner?: JobIdentity,
    /** Devices cgroup rules (`c 195:1 rwm`) for the device files that are other jobs' (devices.ts). */
    denied: string[] = [],
  ): Promise<JobCgroup | undefined> {
    const settings =
      this.version === 2
        ? unifiedSettings(requests, this.opts.pidsLimit)
        : v1Settings(requests, this.opts.pidsLimit);
    // One rule per write: the kernel takes one line at a time.
    if (denied.length > 0 && this.version === 1)
      settings.set(
        'devices',
        denied.map((rule) => ({ file: 'devices.deny', value: rule })),
      );
    const memory = requests.memory ?? 0;

    const name = `job-${jobId}.worker-${workerId}${rank === undefined ? '' : `.rank-${rank}`}`;
    const cgroup: JobCgroup = { dirs: [] };
    try {
      for (const [c, values] of settings) {
        const parent = this.parents.get(c);
        if (!parent) continue; // not usable here (reported at start)
        const dir = join(parent, name);
        // recursive: the parent may have been removed by a predecessor closing meanwhile
        await mkdir(dir, { recursive: true });
        if (!cgroup.dirs.includes(dir)) cgroup.dirs.push(dir); // v2: one group, every controller
        for (const setting of values) await apply(dir, setting);
        // A job under its own uid joins its groups itself (agent/cgroups.ts): it may write its pid
        // into its own groups' cgroup.procs, and nothing else there — not the limits, not another
        // group's, not a subgroup (the directory stays the server's).
        if (owner && cgroup.dirs.at(-1) === dir) {
          await chmod(dir, 0o755); // made under the server's umask (077)
          await chown(join(dir, 'cgroup.procs'), owner.uid, owner.gid);
        }
        if (c === 'memory') cgroup.memory = { dir, limit: formatAmount('memory', memory) };
        if (this.version === 2) cgroup.unified = true;
      }
    } catch (e) {
      await removeCgroup(cgroup.dirs).catch(() => {});
      throw new Error(`cannot make the job's cgroup: ${(e as Error).message}`);
    }
    return cgroup.dirs.length ? cgroup : undefined;
  }

  /**
   * Removes the groups that servers which died left (their agent hosts, which remove them, died
   * too), with whatever still runs in them: the groups of any gone server on this machine, and
   * those of an earlier factory of this name in this process. Nothing in them is anyone else's.
   * Only siblings under this server's own group are looked at: a server in another container
   * (whose pids this one cannot see) is in a group of its own.
   */
  async removeStale(): Promise<void> {
    const stale: string[] = [];
    for (const parent of new Set(this.parents.values())) {
      stale.push(...subgroups(parent));
      const base = join(parent, '..', '..');
      stale.push(...subgroups(base).filter((dir) => deadServerGroup(basename(dir))));
    }
    await Promise.allSettled(stale.map(removeTree));
  }

  /** Removes the factory's parent groups, and the server's, once empty. */
  close(): void {
    for (const dir of new Set(this.parents.values())) removeUpTo(dir, join(dir, '..'));
  }
}

function subgroups(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => join(dir, d.name));
  } catch {
    return []; // gone meanwhile
  }
}

/** A group with its subgroups, deepest first: a group with children cannot be removed. */
async function removeTree(dir: string): Promise<void> {
  for (const child of subgroups(dir)) await removeTree(child);
  await removeCgroup([dir]);
}

/** cgroup v1: a hierarchy per controller, each with its own files. */
function v1Settings(requests: Amounts, pidsLimit: number | undefined): Map<Controller, Setting[]> {
  const settings = new Map<Controller, Setting[]>();
  const memory = requests.memory ?? 0;
  if (memory > 0)
    settings.set('memory', [
      { file: 'memory.limit_in_bytes', value: memory },
      // No swap beyond the limit either, as Slurm's default; the file exists only with swap accounting.
      { file: 'memory.memsw.limit_in_bytes', value: memory, optional: true },
    ]);
  const cpu = requests.cpu ?? 0;
  if (cpu > 0)
    settings.set('cpu', [
      { file: 'cpu.cfs_period_us', value: CPU_PERIOD_US },
      { file: 'cpu.cfs_quota_us', value: cpuQuota(cpu) },
    ]);
  if (pidsLimit !== undefined) settings.set('pids', [{ file: 'pids.max', value: pidsLimit }]);
  return settings;
}

/**
 * cgroup v2: one group per job. `memory.max` is the request, with no swap beyond it, and
 * `memory.oom.group` so that the kernel's OOM kill takes the whole job, not one process of it.
 * `cpu.max` — a hard quota, as v1's CFS quota — rather than `cpu.weight`: a job's request is also
 * its limit in berth (what its queue's quota counted is what it gets, as on v1 and under Slurm's
 * cores), where a weight would let it use every idle core and finish sooner on an empty machine
 * than on a full one.
 */
function unifiedSettings(requests: Amounts, pidsLimit: number | undefined): Map<Controller, Setting[]> {
  const settings = new Map<Controller, Setting[]>();
  const memory = requests.memory ?? 0;
  if (memory > 0)
    settings.set('memory', [
      { file: 'memory.max', value: memory },
      { file: 'memory.swap.max', value: 0, optional: true },
      { file: 'memory.oom.group', value: 1, optional: true },
    ]);
  const cpu = requests.cpu ?? 0;
  if (cpu > 0) settings.set('cpu', [{ file: 'cpu.max', value: `${cpuQuota(cpu)} ${CPU_PERIOD_US}` }]);
  if (pidsLimit !== undefined) settings.set('pids', [{ file: 'pids.max', value: pidsLimit }]);
  return settings;
}

/** A request in millicores as a quota per CPU_PERIOD_US, at least the kernel's smallest. */
const cpuQuota = (millicores: number): number =>
  Math.max(MIN_CPU_QUOTA_US, Math.round((millicores * CPU_PERIOD_US) / 1000));

interface Setting {
  file: string;
  value: number | string;
  /** Skipped when the kernel does not have the file. */
  optional?: boolean;
}

async function apply(dir: string, { file, value, optional }: Setting): Promise<void> {
  const path = join(dir, file);
  if (
    optional &&
    !(await access(path).then(
      () => true,
      () => false,
    ))
  )
    return;
  try {
    await writeFile(path, String(value));
  } catch (e) {
    throw new Error(`cannot set ${path} to ${value}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

const list = (m: Map<Controller, string>) => [...m].map(([c, why]) => `${c}: ${why}`).join(', ');

/**
 * What each local factory can enforce on this machine, for the start-up output: its summary line,
 * and whether a job's devices are kept from other jobs (a devices group per job). Throws a
 * ConfigError for an unmet `required`.
 */
export function describeEnforcement(
  config: Config,
  dataDir: string,
  file?: string,
): Map<string, { summary: string; devices: boolean }> {
  const found = new Map<string, { summary: string; devices: boolean }>();
  for (const [name, f] of Object.entries(config.factories)) {
    if (f.kind !== 'local') continue;
    const probe = CgroupEnforcement.open(
      {
        factory: name,
        dataDir,
        mode: f.cgroups ?? 'auto',
        pidsLimit: f.pidsLimit,
        devices: f.devices !== undefined,
        file,
      },
      false,
    );
    found.set(name, { summary: probe.summary, devices: probe.controllers.has('devices') });
  }
  return found;
}
