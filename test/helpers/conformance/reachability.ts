// Expected matrices, stated the way the upstream e2e suite states them (NewReachability(all, true)
// then ExpectPeer / ExpectAllIngress / Expect): a default plus ordered overrides, later ones win.
// Written from the case's own reading of the spec, never by asking netfence or the oracle.
//
// One rule is built in: an endpoint always reaches itself (a pod's connection to its own IP never
// leaves its namespace; DESIGN §3 "a pod reaching itself" is always allowed), so every expected
// matrix asserts its diagonal as reachable.

import { matrixOf, type Matrix } from '../../../sandbox/index.js';
import { MODEL_POD_KEYS } from './model.js';

/**
 * Which endpoints an expectation is about: `*` (all), `x/*` (a namespace), `*\/a` (a pod name in
 * every namespace), an exact key (`x/a`, `node:n1`), a list of those, or a predicate.
 */
export type Pattern = string | readonly string[] | ((endpoint: string) => boolean);

function matcher(pattern: Pattern): (endpoint: string) => boolean {
  if (typeof pattern === 'function') return pattern;
  if (typeof pattern !== 'string') {
    const each = pattern.map(matcher);
    return (e) => each.some((m) => m(e));
  }
  if (pattern === '*') return () => true;
  if (pattern.endsWith('/*')) return (e) => !e.startsWith('node:') && e.startsWith(pattern.slice(0, -1));
  if (pattern.startsWith('*/')) return (e) => !e.startsWith('node:') && e.endsWith(pattern.slice(1));
  return (e) => e === pattern;
}

export class Reachability {
  private readonly overrides: { from: (e: string) => boolean; to: (e: string) => boolean; ok: boolean }[] = [];

  constructor(
    readonly froms: readonly string[],
    readonly tos: readonly string[] = froms,
    private readonly initial = true,
  ) {}

  /** Cells from `from` to `to` are `ok` (upstream ExpectPeer / Expect). */
  expect(from: Pattern, to: Pattern, ok: boolean): this {
    this.overrides.push({ from: matcher(from), to: matcher(to), ok });
    return this;
  }

  allow(from: Pattern, to: Pattern): this {
    return this.expect(from, to, true);
  }

  deny(from: Pattern, to: Pattern): this {
    return this.expect(from, to, false);
  }

  /** Nothing reaches `to` (upstream ExpectAllIngress(to, false)). */
  denyIngress(to: Pattern): this {
    return this.deny('*', to);
  }

  /** `from` reaches nothing (upstream ExpectAllEgress(from, false)). */
  denyEgress(from: Pattern): this {
    return this.deny(from, '*');
  }

  /** Only `froms` reach `to`: everything else into `to` is blocked. */
  allowOnlyFrom(froms: Pattern, to: Pattern): this {
    return this.deny('*', to).allow(froms, to);
  }

  matrix(): Matrix {
    return matrixOf(this.froms, this.tos, (from, to) => {
      if (from === to) return true;
      let ok = this.initial;
      for (const o of this.overrides) if (o.from(from) && o.to(to)) ok = o.ok;
      return ok;
    });
  }
}

/** The model's 9×9 pod matrix, everything reachable until overridden. */
export const reach = (endpoints: readonly string[] = MODEL_POD_KEYS): Reachability => new Reachability(endpoints);

/** Everything reachable: what any case expects once its policies are gone. */
export const allReachable = (endpoints: readonly string[] = MODEL_POD_KEYS): Matrix => reach(endpoints).matrix();
