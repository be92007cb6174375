/**
 * A job's reason as a person reads it: escaped (domain/printable.ts), and the instants the server
 * wrote in it (ISO, UTC) in the browser's zone and relative to now, ticking: "reserved to start at
 * 19:26 (in 9m54s)" (domain/reason-times.ts, as the CLI says it).
 */
import { printable } from '../../../src/domain/printable.js';
import { timesForPerson } from '../../../src/domain/reason-times.js';
import { useNow } from '../hooks.js';

export function ReasonText({ reason }: { reason: string }) {
  const now = useNow();
  return <>{timesForPerson(printable(reason), now)}</>;
}
