/** Small hooks shared by the pages. */
import { useEffect, useRef, useSyncExternalStore } from 'react';
import { stream, type LocalEvents, type StreamStatus } from './stream.js';
import type { StreamEvents } from './types.js';

type AllEvents = StreamEvents & LocalEvents;

/** Calls `fn` on each `event` of the tab's stream; `fn` may change between renders freely. */
export function useStreamEvent<K extends keyof AllEvents>(event: K, fn: (data: AllEvents[K]) => void): void {
  const ref = useRef(fn);
  useEffect(() => {
    ref.current = fn;
  });
  useEffect(() => stream.on(event, (data) => ref.current(data)), [event]);
}

export function useStreamStatus(): StreamStatus {
  return useSyncExternalStore(stream.onStatus, stream.status);
}

/** One clock for the whole page, so ages and durations tick together with a single timer. */
const clock = {
  now: Date.now(),
  listeners: new Set<() => void>(),
  timer: undefined as number | undefined,
};

function subscribeClock(fn: () => void): () => void {
  clock.listeners.add(fn);
  if (clock.timer === undefined) {
    clock.now = Date.now();
    clock.timer = window.setInterval(() => {
      clock.now = Date.now();
      for (const l of clock.listeners) l();
    }, 1000);
  }
  return () => {
    clock.listeners.delete(fn);
    if (clock.listeners.size === 0) {
      window.clearInterval(clock.timer);
      clock.timer = undefined;
    }
  };
}

/** The current time in ms, updated every second. */
export function useNow(): number {
  return useSyncExternalStore(subscribeClock, () => clock.now);
}

/**
 * A debounced call of the latest `fn`: many calls within `ms` become one, at the end, but never
 * later than `maxWait` after the first (so a steady flow of events still refreshes).
 */
export function useDebounced(fn: () => void, ms: number, maxWait = ms * 5): () => void {
  const ref = useRef(fn);
  const timer = useRef<number | undefined>(undefined);
  const first = useRef<number | null>(null);
  useEffect(() => {
    ref.current = fn;
  });
  useEffect(() => () => window.clearTimeout(timer.current), []);
  const trigger = useRef(() => {
    const now = Date.now();
    if (first.current === null) first.current = now;
    window.clearTimeout(timer.current);
    const wait = Math.max(0, Math.min(ms, first.current + maxWait - now));
    timer.current = window.setTimeout(() => {
      first.current = null;
      ref.current();
    }, wait);
  });
  return trigger.current;
}

/** Sets the document's title while a page is shown. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = title ? `${title} · berth` : 'berth';
  }, [title]);
}

/** Runs `load` when the component mounts and whenever `load` changes; aborts it when it goes. */
export function useLoad(load: (signal: AbortSignal) => Promise<void>): void {
  useEffect(() => {
    const abort = new AbortController();
    void load(abort.signal);
    return () => abort.abort();
  }, [load]);
}
