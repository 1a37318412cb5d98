// Which objects of a new desired state are the very objects of the state programmed before (the compiler hands
// back the same object for what did not change): the planner skips those unseen. Found by walking both lists in
// step, as consecutive states differ in a few places, instead of putting every previous object into a set on
// every sync. The answer is exactly the set's: an object the walk does not find just ahead is looked for in the
// whole list, and after a few of those a set of the previous objects decides the rest.

/** How far ahead in the previous list an object is looked for (objects removed before it). */
const LOOKAHEAD = 16;
/** Objects looked for in the whole list before a set of it is built. */
const MAX_MISSES = 8;

/** 1 at each index of `desired` whose object is one of `previous` (by identity), else 0. */
export function knownFlags(desired: readonly object[], previous: readonly object[] | undefined): Uint8Array {
  const flags = new Uint8Array(desired.length);
  if (previous === undefined || previous.length === 0) return flags;
  let j = 0;
  let misses = 0;
  let all: Set<object> | undefined;
  for (let i = 0; i < desired.length; i++) {
    const d = desired[i]!;
    if (all) {
      if (all.has(d)) flags[i] = 1;
      continue;
    }
    const end = Math.min(previous.length, j + LOOKAHEAD);
    let k = j;
    while (k < end && previous[k] !== d) k++;
    if (k === end) {
      // Not just ahead: new, or elsewhere in the list (moved, or after a long removal). A scan of pointers
      // decides for the first few; past that, a set.
      if (++misses > MAX_MISSES) {
        all = new Set(previous);
        if (all.has(d)) flags[i] = 1;
        continue;
      }
      k = previous.indexOf(d);
      if (k < 0) continue;
    }
    flags[i] = 1;
    j = k + 1;
  }
  return flags;
}

/** The object of `previous` named `name`: a scan for the first few asked, a map after that. */
export function byNameIn<T extends { readonly name: string }>(previous: readonly T[] | undefined): (name: string) => T | undefined {
  let asked = 0;
  let map: Map<string, T> | undefined;
  return (name) => {
    if (!previous) return undefined;
    if (map) return map.get(name);
    if (++asked <= MAX_MISSES) return previous.find((p) => p.name === name);
    map = new Map();
    for (const p of previous) map.set(p.name, p);
    return map.get(name);
  };
}
