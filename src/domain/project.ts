/** Projects: the namespace every job lives in, bound to exactly one cluster queue. */
import type { Role } from './roles.js';

export interface Project {
  name: string;
  description: string;
  tags: string[];
  clusterQueue: string;
  active: boolean;
  /** Fair-share weight in its cluster queue (default 1): weight 2 gets twice the share of 1. */
  weight: number;
  createdAt: string;
  updatedAt: string;
}

export interface ProjectMember {
  user: string;
  role: Role;
}

export interface ProjectDetail extends Project {
  members: ProjectMember[];
  privileges: string[];
}
