/**
 * CLI failures. Every error a user can cause ends as one line `berth: MESSAGE` on stderr and a
 * non-zero exit: 2 for usage mistakes (bad flags, missing arguments), 1 for everything else.
 */
import { CommanderError } from 'commander';
import { ConfigError } from '../domain/errors.js';

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A failure with a message meant for the user, e.g. an unreadable config file. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAILURE,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** The command line itself is wrong (what commander would say about a bad flag). */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT_USAGE);
    this.name = 'UsageError';
  }
}

/** Collapses a message to one line. */
export const oneLine = (s: string): string => s.replace(/\s*\n\s*/g, ' ').trim();

export interface Failure {
  /** Already printed (commander writes its own errors through `outputError`). */
  printed: boolean;
  message: string;
  exitCode: number;
}

/** What to print and which exit code to use for anything a command throws. */
export function describeFailure(err: unknown): Failure {
  if (err instanceof CommanderError) {
    // Help and version output end in a CommanderError too; they are successes.
    const ok = err.code === 'commander.helpDisplayed' || err.code === 'commander.version';
    return { printed: true, message: err.message, exitCode: ok ? 0 : EXIT_USAGE };
  }
  if (err instanceof CliError) return { printed: false, message: err.message, exitCode: err.exitCode };
  if (err instanceof ConfigError) {
    return { printed: false, message: `invalid configuration: ${err.message}`, exitCode: EXIT_FAILURE };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { printed: false, message, exitCode: EXIT_FAILURE };
}
