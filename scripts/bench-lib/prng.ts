// A small seeded PRNG (mulberry32) and the samplers the synthetic cluster generator needs.
// Benchmarks must compare like with like, so nothing here may touch Math.random or the clock.

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** Uniform integer in [min, max], both inclusive. */
  between(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** Picks by relative weight. */
  weighted<T>(items: readonly (readonly [T, number])[]): T;
  /** Fisher–Yates, returns a new array. */
  shuffle<T>(items: readonly T[]): T[];
}

export function mulberry32(seed: number): Rng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return {
    next,
    int,
    between: (min, max) => min + int(max - min + 1),
    chance: (p) => next() < p,
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[int(items.length)]!;
    },
    weighted: <T>(items: readonly (readonly [T, number])[]): T => {
      const total = items.reduce((sum, [, w]) => sum + w, 0);
      let r = next() * total;
      for (const [item, w] of items) {
        r -= w;
        if (r < 0) return item;
      }
      return items[items.length - 1]![0];
    },
    shuffle: <T>(items: readonly T[]): T[] => {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = int(i + 1);
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
      return out;
    },
  };
}

/**
 * Zipf-like ranks: P(rank k) ∝ 1 / (k + 1)^s over n ranks. Real clusters look like this: a few
 * namespaces, apps and teams hold most pods, a long tail holds a handful each.
 */
export function zipf(n: number, s = 1.1): (rng: Rng) => number {
  const cumulative: number[] = [];
  let sum = 0;
  for (let k = 0; k < n; k++) {
    sum += 1 / Math.pow(k + 1, s);
    cumulative.push(sum);
  }
  return (rng) => {
    const r = rng.next() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! > r) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
}
