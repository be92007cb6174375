/** Entry point of the `berth` command: one line on stderr and a non-zero exit for any failure. */
import { describeFailure, oneLine } from './errors.js';
import { buildProgram } from './program.js';

try {
  await buildProgram().parseAsync(process.argv);
} catch (err) {
  const failure = describeFailure(err);
  if (!failure.printed) process.stderr.write(`berth: ${oneLine(failure.message)}\n`);
  if (process.env.BERTH_DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  // Exit now: a half-started server or an open stream must not keep the process alive.
  process.exit(failure.exitCode);
}
