/** Priority classes: named priorities an admin defines, so jobs can say `high` instead of 1000. */
import { BadRequestError } from './errors.js';
import { checkDnsLabel } from './names.js';

/** Priorities, given as numbers or through a class, stay within ±1e9 (as Kubernetes'). */
export const PRIORITY_MIN = -1_000_000_000;
export const PRIORITY_MAX = 1_000_000_000;

export interface PriorityClass {
  name: string;
  value: number;
  description: string;
  createdAt: string;
}

/**
 * A class name is a DNS label that is not a number: `--priority 100` must stay the number 100,
 * so a class named "100" could never be chosen.
 */
export function checkPriorityClassName(name: string): string {
  checkDnsLabel('priority class name', name);
  if (/^[0-9]+$/.test(name))
    throw new BadRequestError(`priority class name "${name}" must not be a number: give it a letter`);
  return name;
}

export function checkPriorityValue(value: number): number {
  if (!Number.isSafeInteger(value) || value < PRIORITY_MIN || value > PRIORITY_MAX)
    throw new BadRequestError(
      `priority ${value} must be a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX}`,
    );
  return value;
}
