// Statistics for the benchmarks' tables: percentiles of samples, a Prometheus histogram's quantile, and a
// least-squares slope (memory growth per minute, latency drift over a run).

/** Nearest-rank percentile of ascending `sorted` (p in 0..100): a value that was measured, never interpolated. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * The q-quantile (0..1) of a histogram given as cumulative bucket counts by upper bound (`le`, +Inf last),
 * interpolated linearly inside the bucket it falls in, as Prometheus' histogram_quantile does. Beyond the
 * last finite bound it answers that bound (the histogram knows no more).
 */
export function histogramQuantile(q: number, buckets: readonly { readonly le: number; readonly count: number }[]): number {
  const sorted = [...buckets].sort((a, b) => a.le - b.le);
  const total = sorted.at(-1)?.count ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const b of sorted) {
    if (b.count >= rank) {
      if (b.le === Infinity) return lowerBound;
      const inBucket = b.count - lowerCount;
      return inBucket === 0 ? b.le : lowerBound + ((b.le - lowerBound) * (rank - lowerCount)) / inBucket;
    }
    lowerBound = b.le;
    lowerCount = b.count;
  }
  return lowerBound;
}

/** Slope of the least-squares line through (x, y) points: NaN with fewer than two distinct x. */
export function leastSquaresSlope(points: readonly { readonly x: number; readonly y: number }[]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const meanX = points.reduce((s, p) => s + p.x, 0) / n;
  const meanY = points.reduce((s, p) => s + p.y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of points) {
    sxy += (p.x - meanX) * (p.y - meanY);
    sxx += (p.x - meanX) ** 2;
  }
  return sxx === 0 ? NaN : sxy / sxx;
}
