/** Projects: the namespace every job lives in, bound to exactly one cluster queue. */
import type { Role } from './roles.js';

export interface Project {
  name: string;
  description: string;
  tags: string[];
  clusterQueue: string;
  active: boolean;
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
