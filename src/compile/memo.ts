// Typed memo keys: a result is found again by the tuple of inputs it was made from (objects by identity,
// strings and numbers by value) through nested Maps, never through a key string built by hand.

/** A map keyed by a fixed-length tuple. */
export class TupleMap<K extends readonly unknown[], V> {
  private readonly root = new Map<unknown, unknown>();

  get(key: K): V | undefined {
    let node: unknown = this.root;
    for (const part of key) {
      node = (node as Map<unknown, unknown>).get(part);
      if (node === undefined) return undefined;
    }
    return node as V;
  }

  set(key: K, value: V): void {
    let node = this.root;
    for (let i = 0; i < key.length - 1; i++) {
      let next = node.get(key[i]) as Map<unknown, unknown> | undefined;
      if (!next) node.set(key[i], (next = new Map()));
      node = next;
    }
    node.set(key[key.length - 1], value);
    this.depth = key.length;
  }

  private depth = 0;

  /** Drops the values `keep` refuses (and the nodes left empty); returns how many values remain. */
  sweep(keep: (value: V) => boolean): number {
    let left = 0;
    const walk = (node: Map<unknown, unknown>, level: number): void => {
      for (const [part, child] of node) {
        if (level === this.depth - 1) {
          if (keep(child as V)) left++;
          else node.delete(part);
          continue;
        }
        walk(child as Map<unknown, unknown>, level + 1);
        if ((child as Map<unknown, unknown>).size === 0) node.delete(part);
      }
    };
    if (this.depth > 0) walk(this.root, 0);
    return left;
  }
}

/** A value and the compile that last asked for it. */
interface Used<V> {
  value: V;
  used: number;
}

/**
 * Forgetting what a compile did not ask for, without rebuilding the maps after every compile: entries carry the
 * compile that last used them, and once as many entries were made since the last sweep as it kept (and at least
 * SWEEP_MIN), those the last compile did not use are dropped. Memory stays within about twice what one compile
 * uses; a one-pod change no longer re-creates a nested map per local pod.
 */
class Generations<K extends readonly unknown[], V> {
  private readonly entries = new TupleMap<K, Used<V>>();
  private generation = 0;
  private kept = 0;
  private made = 0;

  /** The entry of `key`, marked as used by this compile. */
  use(key: K): Used<V> | undefined {
    const entry = this.entries.get(key);
    if (entry) entry.used = this.generation;
    return entry;
  }

  add(key: K, value: V): void {
    this.entries.set(key, { value, used: this.generation });
    this.made++;
  }

  /** A compile ended. */
  rotate(): void {
    this.generation++;
    if (this.made <= Math.max(SWEEP_MIN, this.kept)) return;
    const last = this.generation - 1;
    this.kept = this.entries.sweep((e) => e.used === last);
    this.made = 0;
  }
}

const SWEEP_MIN = 256;

/**
 * Results reused from one compile to the next while they are asked for with the same key; rotate() after
 * each compile (what no compile asks for any more is dropped, see Generations). A result is a pure function of
 * its key, so one kept a little longer is the one make() would give again.
 */
export class Memo<K extends readonly unknown[], V> {
  private readonly entries = new Generations<K, V>();

  get(key: K, make: () => V): V {
    const found = this.entries.use(key);
    if (found) return found.value;
    const v = make();
    this.entries.add(key, v);
    return v;
  }

  rotate(): void {
    this.entries.rotate();
  }
}

/**
 * Chains whose content decides their reuse (dispatch children, shared-address chains): a chain equal to
 * the one of its family and name handed out last comes back as that same object.
 */
export class ChainInterner<C extends { readonly name: string }> {
  private readonly entries = new Generations<readonly [number, string], C>();

  intern(family: number, chain: C): C {
    const key = [family, chain.name] as const;
    const before = this.entries.use(key);
    if (before === undefined) {
      this.entries.add(key, chain);
      return chain;
    }
    if (before.value !== chain && !sameData(before.value, chain)) before.value = chain;
    return before.value;
  }

  rotate(): void {
    this.entries.rotate();
  }
}

/** Deep equality of plain data (objects, arrays, primitives), as JSON would compare them. */
export function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  // Counted, not listed: the dispatch trees compare every rule of theirs whenever a pod comes or goes.
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let defined = 0;
  for (const k of Object.keys(x)) {
    if (x[k] === undefined) continue;
    defined++;
    if (!sameData(x[k], y[k])) return false;
  }
  for (const k of Object.keys(y)) if (y[k] !== undefined) defined--;
  return defined === 0;
}
