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
  }
}

/**
 * Results reused from one compile to the next while they are asked for with the same key; rotate() after
 * each compile drops what that compile did not ask for.
 */
export class Memo<K extends readonly unknown[], V> {
  private previous = new TupleMap<K, V>();
  private current = new TupleMap<K, V>();

  get(key: K, make: () => V): V {
    let v = this.current.get(key);
    if (v !== undefined) return v;
    v = this.previous.get(key) ?? make();
    this.current.set(key, v);
    return v;
  }

  rotate(): void {
    this.previous = this.current;
    this.current = new TupleMap();
  }
}

/**
 * Chains whose content decides their reuse (dispatch children, shared-address chains): a chain equal to
 * the one of its family and name the last compile returned comes back as that same object.
 */
export class ChainInterner<C extends { readonly name: string }> {
  private previous = new TupleMap<readonly [number, string], C>();
  private current = new TupleMap<readonly [number, string], C>();

  intern(family: number, chain: C): C {
    const key = [family, chain.name] as const;
    const before = this.current.get(key) ?? this.previous.get(key);
    const out = before !== undefined && sameData(before, chain) ? before : chain;
    this.current.set(key, out);
    return out;
  }

  rotate(): void {
    this.previous = this.current;
    this.current = new TupleMap();
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
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!sameData((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  return true;
}
