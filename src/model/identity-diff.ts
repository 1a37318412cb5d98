// Differences between two versions of a list whose unchanged elements are the same values.

/**
 * What `next` holds that `prev` does not, and the reverse, by identity. Consecutive snapshots (and the
 * member lists of one set) differ in a few places and keep their order, so walking both in step finds
 * the differences without hashing every element; past a few dozen mismatches the rest is diffed with
 * sets. An element that merely moved may be reported both removed and added: callers treat that as a
 * change, never as a loss.
 */
export function diffByIdentity<T>(prev: readonly T[], next: readonly T[]): { added: T[]; removed: T[] } {
  const added: T[] = [];
  const removed: T[] = [];
  // The same list (a compiler asked for another node of the same snapshot): nothing to walk.
  if (prev === next) return { added, removed };
  let i = 0;
  let j = 0;
  let mismatches = 0;
  while (i < prev.length && j < next.length) {
    if (prev[i] === next[j]) {
      i++;
      j++;
    } else if (++mismatches > 64) {
      const rest = new Set(next.slice(j));
      const old = new Set(prev.slice(i));
      for (const p of old) if (!rest.has(p)) removed.push(p);
      for (const p of rest) if (!old.has(p)) added.push(p);
      return { added, removed };
    } else if (prev[i + 1] === next[j]) {
      removed.push(prev[i++]!);
    } else if (prev[i] === next[j + 1]) {
      added.push(next[j++]!);
    } else {
      removed.push(prev[i++]!);
      added.push(next[j++]!);
    }
  }
  while (i < prev.length) removed.push(prev[i++]!);
  while (j < next.length) added.push(next[j++]!);
  return { added, removed };
}
