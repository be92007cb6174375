/** A Cancel button (a job's, an array's): disabled while asked, then "Cancelling…"; errors below it. */
import { useState } from 'react';
import { ApiError } from '../api.js';
import { ErrorAlert } from './Status.js';

export function CancelButton<T>({
  label,
  requested,
  cancel,
  onCancelled,
}: {
  label: string;
  /** Cancelling was asked already (by anyone): nothing more to ask. */
  requested: boolean;
  cancel: () => Promise<T>;
  onCancelled: (result: T) => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (requested) {
    return (
      <button type="button" className="button-danger" disabled>
        Cancelling…
      </button>
    );
  }
  return (
    <div className="cancel">
      <button
        type="button"
        className="button-danger"
        disabled={busy}
        onClick={() => {
          setBusy(true);
          setError(null);
          cancel().then(
            (r) => {
              setBusy(false);
              onCancelled(r);
            },
            (e: unknown) => {
              setBusy(false);
              setError(e instanceof ApiError ? e.message : String(e));
            },
          );
        }}
      >
        {label}
      </button>
      {error && <ErrorAlert>{error}</ErrorAlert>}
    </div>
  );
}
