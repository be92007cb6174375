/** Loading and error states, and the scrolling container of tables, shared by the pages. */
import { useLayoutEffect, useRef, useState, type ReactNode } from 'react';

export function ErrorAlert({ children }: { children: ReactNode }) {
  return (
    <div className="alert" role="alert">
      {children}
    </div>
  );
}

/** Something to know that is not an error (no role: it is not urgent). */
export function Notice({ children }: { children: ReactNode }) {
  return <p className="notice">{children}</p>;
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}

/**
 * A horizontally scrolling container, so that a wide table never widens the page. While it does
 * scroll it can take the focus, so the arrow keys scroll it too.
 */
export function TableWrap({ children }: { children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrolls, setScrolls] = useState(false);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const check = () => setScrolls(el.scrollWidth > el.clientWidth + 1);
    check();
    const observer = new ResizeObserver(check);
    observer.observe(el);
    if (el.firstElementChild) observer.observe(el.firstElementChild);
    return () => observer.disconnect();
  }, []);
  return (
    <div ref={ref} className="table-wrap" tabIndex={scrolls ? 0 : undefined}>
      {children}
    </div>
  );
}
