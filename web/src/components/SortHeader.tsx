/** A sortable column header: a button in the `th`, and `aria-sort` on it. */
import type { ReactNode } from 'react';

export type Direction = 'ascending' | 'descending' | null;

interface Props {
  children: ReactNode;
  direction: Direction;
  onSort: () => void;
  className?: string;
}

export function SortHeader({ children, direction, onSort, className }: Props) {
  return (
    <th scope="col" aria-sort={direction ?? 'none'} className={className}>
      <button type="button" className="sort" onClick={onSort}>
        {children}
        <span className="sort-icon" aria-hidden="true">
          {direction === 'ascending' ? '▲' : direction === 'descending' ? '▼' : '↕'}
        </span>
      </button>
    </th>
  );
}
