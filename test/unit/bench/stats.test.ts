import { describe, expect, it } from '@jest/globals';
import { histogramQuantile, leastSquaresSlope, percentile } from '../../../scripts/bench-lib/stats.js';

describe('percentile (nearest rank)', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
  it.each([
    [50, 50],
    [99, 99],
    [100, 100],
    [1, 1],
    [0, 1],
  ])('p%d of 1..100 is %d', (p, want) => expect(percentile(hundred, p)).toBe(want));
  it('p99 of ten samples is the largest (fewer than 100 samples cannot name a 99th)', () =>
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99)).toBe(10));
  it('p50 of an even count is the lower middle, a value that was measured', () => expect(percentile([10, 20, 30, 40], 50)).toBe(20));
  it('no samples: NaN, not 0', () => expect(percentile([], 50)).toBeNaN());
});

describe('histogramQuantile (as Prometheus interpolates)', () => {
  // 10 observations ≤ 0.01, 80 in (0.01, 0.05], 10 in (0.05, 0.1].
  const buckets = [
    { le: 0.01, count: 10 },
    { le: 0.05, count: 90 },
    { le: 0.1, count: 100 },
    { le: Infinity, count: 100 },
  ];
  it('the median falls half way through the second bucket', () => expect(histogramQuantile(0.5, buckets)).toBeCloseTo(0.03, 10));
  it('p99 falls nine tenths into the last finite bucket', () => expect(histogramQuantile(0.99, buckets)).toBeCloseTo(0.095, 10));
  it('in the first bucket it interpolates from 0', () => expect(histogramQuantile(0.05, buckets)).toBeCloseTo(0.005, 10));
  it('observations beyond every finite bound answer the largest bound', () =>
    expect(
      histogramQuantile(0.99, [
        { le: 0.5, count: 1 },
        { le: Infinity, count: 10 },
      ]),
    ).toBe(0.5));
  it('bucket order does not matter', () => expect(histogramQuantile(0.5, [...buckets].reverse())).toBeCloseTo(0.03, 10));
  it('an empty histogram: NaN', () => expect(histogramQuantile(0.5, [{ le: Infinity, count: 0 }])).toBeNaN());
});

describe('leastSquaresSlope', () => {
  it('a straight line: its slope', () => expect(leastSquaresSlope([0, 1, 2, 3].map((x) => ({ x, y: 5 + 2 * x })))).toBeCloseTo(2, 10));
  it('flat with symmetric noise: 0', () =>
    expect(leastSquaresSlope([100, 102, 101, 101, 102, 100].map((y, x) => ({ x, y })))).toBeCloseTo(0, 10));
  // x deviations ±2.5, ±1.5, ±0.5 (Σdx² = 17.5) against y deviations ∓1 alternating (Σdx·dy = 3).
  it('alternating noise leans by Σdx·dy / Σdx²', () =>
    expect(leastSquaresSlope([100, 102, 100, 102, 100, 102].map((y, x) => ({ x, y })))).toBeCloseTo(3 / 17.5, 10));
  it('a decline: negative', () =>
    expect(
      leastSquaresSlope([
        { x: 0, y: 10 },
        { x: 2, y: 6 },
      ]),
    ).toBe(-2));
  it('fewer than two points, or one x only: NaN', () => {
    expect(leastSquaresSlope([{ x: 1, y: 1 }])).toBeNaN();
    expect(
      leastSquaresSlope([
        { x: 1, y: 1 },
        { x: 1, y: 3 },
      ]),
    ).toBeNaN();
  });
});
