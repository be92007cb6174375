/**
 * What a tag stands for, asked of its registry once for many jobs: jobs that ask at the same time
 * share one question, and an answer is kept for `ttlMs` — an array of ten thousand tasks asks
 * once, not ten thousand times (Docker Hub counts manifest requests against a rate limit), and a
 * job admitted right after another of the same tag starts without the round trip (about 20 ms
 * of skopeo here). The cost: a tag moved within `ttlMs` reaches jobs admitted after that long.
 * A failure is never kept: the next job asks again.
 */
import { formatImageReference, type ImageReference } from './reference.js';

export class DigestMemo {
  private readonly known = new Map<string, { digest: string; at: number }>();
  private readonly asking = new Map<string, Promise<string>>();

  /** `ask`: the registry's answer for `project` (with its login, when it has one). */
  constructor(
    private readonly ask: (ref: ImageReference, project: string) => Promise<string>,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * What `ref` stands for, as `project` may read it. Asked per project (logins differ), a reference
   * with a digest too: one project may read an image another may not (skopeo.ts).
   */
  resolve(ref: ImageReference, project: string): Promise<string> {
    const key = `${project}\n${formatImageReference(ref)}`;
    const kept = this.known.get(key);
    if (kept && this.now() - kept.at < this.ttlMs) return Promise.resolve(kept.digest);
    let pending = this.asking.get(key);
    if (!pending) {
      const at = this.now();
      pending = this.ask(ref, project)
        .then((digest) => {
          if (this.ttlMs > 0) this.known.set(key, { digest, at });
          return digest;
        })
        .finally(() => this.asking.delete(key));
      this.asking.set(key, pending);
      // Answers past their time are dropped as others are kept: the map holds the tags in use.
      for (const [k, v] of this.known) if (this.now() - v.at >= this.ttlMs) this.known.delete(k);
    }
    return pending;
  }
}
