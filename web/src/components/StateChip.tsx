/** A job's state as text with a colour chip (never colour alone). */
import type { JobState } from '../types.js';

export function StateChip({ state }: { state: JobState }) {
  return (
    <span className={`state state-${state}`}>
      <span className="state-dot" aria-hidden="true" />
      {state}
    </span>
  );
}
