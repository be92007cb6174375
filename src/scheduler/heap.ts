/** A binary min-heap whose items know their slot, so that re-keying or removing one is O(log n). */

export interface HeapItem {
  heapIndex: number;
}

export class IndexedHeap<T extends HeapItem> {
  private readonly items: T[] = [];

  /** `before(a, b)`: a must come out before b. */
  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  has(x: T): boolean {
    return x.heapIndex >= 0 && this.items[x.heapIndex] === x;
  }

  push(x: T): void {
    x.heapIndex = this.items.length;
    this.items.push(x);
    this.up(x.heapIndex);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  remove(x: T): void {
    if (!this.has(x)) return;
    const i = x.heapIndex;
    const last = this.items.pop();
    x.heapIndex = -1;
    if (last === undefined || last === x) return;
    this.items[i] = last;
    last.heapIndex = i;
    this.down(i);
    this.up(last.heapIndex);
  }

  /** Puts `x` where its (possibly changed) key belongs; adds it if absent. */
  update(x: T): void {
    if (!this.has(x)) return this.push(x);
    this.down(x.heapIndex);
    this.up(x.heapIndex);
  }

  clear(): void {
    for (const x of this.items) x.heapIndex = -1;
    this.items.length = 0;
  }

  /** Replaces the content with `xs` in O(n). */
  rebuild(xs: Iterable<T>): void {
    this.clear();
    for (const x of xs) {
      x.heapIndex = this.items.length;
      this.items.push(x);
    }
    for (let i = (this.items.length >> 1) - 1; i >= 0; i--) this.down(i);
  }

  private up(i: number): void {
    const items = this.items;
    const x = items[i];
    if (x === undefined) return;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p];
      if (parent === undefined || !this.before(x, parent)) break;
      items[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    items[i] = x;
    x.heapIndex = i;
  }

  private down(i: number): void {
    const items = this.items;
    const n = items.length;
    const x = items[i];
    if (x === undefined) return;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      let c = l;
      const left = items[l] as T;
      const right = items[l + 1];
      let child = left;
      if (right !== undefined && this.before(right, left)) {
        c = l + 1;
        child = right;
      }
      if (!this.before(child, x)) break;
      items[i] = child;
      child.heapIndex = i;
      i = c;
    }
    items[i] = x;
    x.heapIndex = i;
  }
}
