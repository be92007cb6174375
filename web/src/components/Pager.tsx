/**
 * Previous/Next paging by cursor: `cursors` holds the cursor of each page seen so far (the first
 * is null); Next is enabled once the page shown is the one asked for and has a next cursor.
 */
import type { Dispatch, SetStateAction } from 'react';

export function Pager({
  status,
  index,
  nextCursor,
  current,
  setCursors,
}: {
  status: string;
  /** Which page is asked for (0-based). */
  index: number;
  nextCursor: string | null | undefined;
  /** Whether the page on screen is the one asked for. */
  current: boolean;
  setCursors: Dispatch<SetStateAction<(string | null)[]>>;
}) {
  return (
    <div className="pager">
      <p className="pager-status" role="status">
        {status}
      </p>
      <div className="pager-buttons">
        <button
          type="button"
          disabled={index === 0}
          onClick={() => setCursors((c) => (c.length > 1 ? c.slice(0, -1) : c))}
        >
          Previous page
        </button>
        <button
          type="button"
          disabled={!nextCursor || !current}
          onClick={() => {
            if (nextCursor) setCursors((c) => [...c, nextCursor]);
          }}
        >
          Next page
        </button>
      </div>
    </div>
  );
}
