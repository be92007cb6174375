/** A card with a heading that names it (tests and screen readers find it as a region). */
import { useId, type ReactNode } from 'react';

export function Section({
  title,
  children,
  className,
}: {
  title: string;
  children: ReactNode;
  className?: string;
}) {
  const id = useId();
  return (
    <section aria-labelledby={id} className={`card ${className ?? ''}`}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}
