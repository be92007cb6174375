/**
 * The change feed: small notices of committed changes, published in process by the controller
 * and the services, read by the live stream (`GET /api/v1/stream`). A notice says *what* changed,
 * never the whole new state: readers fetch what they show. No I/O here; subscribers are called
 * synchronously, so they must only queue work, and one that throws does not stop the others.
 */
import type { JobState } from '../../domain/job.js';

export type ChangeNotice =
  /** A job was submitted or moved on (admitted, started, evicted, finished, cleaned up…). */
  | { kind: 'job'; id: number; project: string; state: JobState; reason: string }
  /** A cluster queue was created, changed or deleted. */
  | { kind: 'queue'; name: string }
  /** A project was created, changed or deleted, or its members changed. */
  | { kind: 'project'; name: string }
  /** A user was deleted: whatever it had open must end. */
  | { kind: 'user-deleted'; name: string }
  /** One of a user's tokens was revoked: every server drops its cached tokens of that user. */
  | { kind: 'token-revoked'; name: string };

export type ChangeSubscriber = (notice: ChangeNotice) => void;

export class ChangeFeed {
  private readonly subscribers = new Set<ChangeSubscriber>();

  constructor(private readonly onError?: (err: unknown) => void) {}

  /** Calls `fn` with every notice published from now on; returns the unsubscribe function. */
  subscribe(fn: ChangeSubscriber): () => void {
    this.subscribers.add(fn);
    return () => {
      this.subscribers.delete(fn);
    };
  }

  publish(notice: ChangeNotice): void {
    for (const fn of this.subscribers) {
      try {
        fn(notice);
      } catch (e) {
        this.onError?.(e);
      }
    }
  }
}
