/** Project roles, ordered: each role can do what the ones before it can. */
export const ROLES = ['viewer', 'member', 'owner'] as const;
export type Role = (typeof ROLES)[number];

export function roleAtLeast(role: Role | undefined, needed: Role): boolean {
  return role !== undefined && ROLES.indexOf(role) >= ROLES.indexOf(needed);
}
