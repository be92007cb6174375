/** A card of facts: each a name and its value, as a description list. */
import type { ReactNode } from 'react';
import { Section } from './Section.js';

export function Facts({
  title,
  rows,
  className,
}: {
  title: string;
  rows: [string, ReactNode][];
  className?: string;
}) {
  return (
    <Section title={title} className={className}>
      <dl className="facts">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
    </Section>
  );
}
