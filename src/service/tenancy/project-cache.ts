/**
 * Projects and members' roles as submissions read them, so that a busy client is not looked up in
 * the store on every submission (on PostgreSQL a round trip each). An entry is dropped by any
 * change notice about its project — made here or relayed from another replica — and lives a few
 * seconds at most, should a relayed notice be lost. Only reads made outside a write transaction
 * may use it: a check inside one must read the store.
 */
import type { Project } from '../../domain/project.js';
import type { Role } from '../../domain/roles.js';
import { findProject, findRole } from '../../store/queries/projects.js';
import type { Db } from '../../store/store.js';
import type { ChangeFeed } from '../live/change-feed.js';

const TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

interface Entry {
  project: Promise<Project | undefined>;
  roles: Map<number, Promise<Role | undefined>>;
  until: number;
}

export class ProjectCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    changes: ChangeFeed,
    private readonly now: () => number,
  ) {
    changes.subscribe((n) => {
      if (n.kind === 'project') this.entries.delete(n.name);
      if (n.kind === 'user-deleted') this.entries.clear();
    });
  }

  project(db: Db, name: string): Promise<Project | undefined> {
    return this.entry(db, name).project;
  }

  role(db: Db, name: string, userId: number): Promise<Role | undefined> {
    const e = this.entry(db, name);
    let role = e.roles.get(userId);
    if (!role) e.roles.set(userId, (role = this.settle(name, e, findRole(db, name, userId))));
    return role;
  }

  private entry(db: Db, name: string): Entry {
    const now = this.now();
    let e = this.entries.get(name);
    if (e && e.until > now) return e;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    e = { project: Promise.resolve(undefined), roles: new Map(), until: now + TTL_MS };
    e.project = this.settle(name, e, findProject(db, name));
    this.entries.set(name, e);
    return e;
  }

  /** A read that fails is not kept: the next one asks the store again. */
  private settle<T>(name: string, e: Entry, read: Promise<T>): Promise<T> {
    return read.catch((err: unknown) => {
      if (this.entries.get(name) === e) this.entries.delete(name);
      throw err;
    });
  }
}
