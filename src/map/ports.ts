// Port ranges: the cuts a ruleset makes in each protocol's port space, and sets of ranges.

import type { L4Protocol } from '../model/index.js';
import type { PortRange } from './model.js';

export const MAX_PORT = 65535;

/** The first port of each interval the rules cannot tell apart, per protocol: always starts with 1. */
export type PortCuts = ReadonlyMap<L4Protocol, readonly number[]>;

export class CutBuilder {
  private readonly cuts = new Map<L4Protocol, Set<number>>();

  add(proto: L4Protocol, from: number, to: number): void {
    let set = this.cuts.get(proto);
    if (!set) this.cuts.set(proto, (set = new Set([1])));
    if (from >= 1 && from <= MAX_PORT) set.add(from);
    if (to + 1 >= 1 && to + 1 <= MAX_PORT) set.add(to + 1);
  }

  // forEach, indexed loops and a typed array's numeric sort: a map gathers some 7,000 profiles' cuts, read
  // unoptimized (cli/main.ts), where `for…of` makes an iterator and a comparator is a call per comparison.
  merge(other: PortCuts): void {
    other.forEach((cuts, proto) => {
      for (let i = 0; i < cuts.length; i++) this.add(proto, cuts[i]!, cuts[i]! - 1);
    });
  }

  build(): PortCuts {
    const out = new Map<L4Protocol, readonly number[]>();
    this.cuts.forEach((set, proto) => out.set(proto, Array.from(Int32Array.from(set).sort())));
    return out;
  }
}

/** The intervals of one protocol's cuts: `[from, to]` pairs covering 1-65535. */
export function intervalsOf(cuts: PortCuts, proto: L4Protocol): [number, number][] {
  const starts = cuts.get(proto) ?? [1];
  return starts.map((from, i) => [from, (starts[i + 1] ?? MAX_PORT + 1) - 1]);
}

/** Adjacent ranges of the same protocol joined; sorted by protocol order given, then port. */
export function joinRanges(ranges: readonly PortRange[]): PortRange[] {
  const order = (p: L4Protocol) => ['tcp', 'udp', 'sctp'].indexOf(p);
  const sorted = [...ranges].sort((a, b) => order(a.proto) - order(b.proto) || a.from - b.from);
  const out: PortRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && last.proto === r.proto && r.from <= last.to + 1) out[out.length - 1] = { ...last, to: Math.max(last.to, r.to) };
    else out.push(r);
  }
  return out;
}

/** The ports both lists allow. */
export function intersect(a: readonly PortRange[], b: readonly PortRange[]): PortRange[] {
  const out: PortRange[] = [];
  for (const x of a)
    for (const y of b) {
      if (x.proto !== y.proto) continue;
      const from = Math.max(x.from, y.from);
      const to = Math.min(x.to, y.to);
      if (from <= to) out.push({ proto: x.proto, from, to });
    }
  return joinRanges(out);
}

/** The ports of `a` that `b` does not allow. */
export function subtract(a: readonly PortRange[], b: readonly PortRange[]): PortRange[] {
  let rest: PortRange[] = [...a];
  for (const y of b) {
    rest = rest.flatMap((x) => {
      if (x.proto !== y.proto || y.to < x.from || y.from > x.to) return [x];
      const parts: PortRange[] = [];
      if (y.from > x.from) parts.push({ ...x, to: y.from - 1 });
      if (y.to < x.to) parts.push({ ...x, from: y.to + 1 });
      return parts;
    });
  }
  return joinRanges(rest);
}

/** `tcp/80`, `tcp/8000-8080`, `udp (all ports)`. */
export function rangeText(r: PortRange): string {
  if (r.from === 1 && r.to === MAX_PORT) return `${r.proto} (all ports)`;
  return r.from === r.to ? `${r.proto}/${r.from}` : `${r.proto}/${r.from}-${r.to}`;
}

/** The ranges in words; every port of all three protocols is `every port (tcp, udp, sctp)`. */
export function rangesText(ranges: readonly PortRange[]): string {
  if (ranges.length === 0) return 'nothing';
  const whole = (p: string) => ranges.some((r) => r.proto === p && r.from === 1 && r.to === MAX_PORT);
  if (whole('tcp') && whole('udp') && whole('sctp'))
    return ['every port (tcp, udp, sctp)', ...ranges.filter((r) => r.from !== 1 || r.to !== MAX_PORT).map(rangeText)].join(', ');
  return ranges.map(rangeText).join(', ');
}
