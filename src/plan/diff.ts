// A plan as humans read it: unified diffs per chain and set, grouped by the pod or policy they belong to.

import { createRequire } from 'node:module';
import type * as Diff from 'diff';
import type { Change, FamilyPlan } from './plan.js';

// Loaded on first use: `apply`, and `diff` of a node in sync, print no patch (~10 ms of every start).
const diffPackage = (): typeof Diff => createRequire(import.meta.url)('diff') as typeof Diff;

export interface DiffSummary {
  readonly chainsChanged: number;
  readonly setsChanged: number;
  readonly hooksChanged: number;
  readonly rulesWritten: number;
  readonly membersAdded: number;
  readonly membersRemoved: number;
  readonly inSync: boolean;
}

export function summarize(plans: readonly FamilyPlan[]): DiffSummary {
  const changes = plans.flatMap((p) => p.changes);
  const sum = (f: (p: FamilyPlan) => number) => plans.reduce((n, p) => n + f(p), 0);
  return {
    chainsChanged: changes.filter((c) => c.object === 'chain').length,
    setsChanged: changes.filter((c) => c.object === 'set').length,
    hooksChanged: changes.filter((c) => c.object === 'hook').length,
    rulesWritten: sum((p) => p.counts.rulesWritten),
    membersAdded: sum((p) => p.counts.membersAdded),
    membersRemoved: sum((p) => p.counts.membersRemoved),
    inSync: changes.length === 0,
  };
}

export function formatSummary(s: DiffSummary): string {
  if (s.inSync) return 'in sync: the kernel holds exactly the desired chains, sets and hooks';
  return (
    `differs: ${s.chainsChanged} chain(s), ${s.setsChanged} set(s), ${s.hooksChanged} hook(s) to change; ` +
    `${s.rulesWritten} rule(s) to write, ${s.membersAdded} member(s) to add, ${s.membersRemoved} to remove`
  );
}

/** Unified diff text of every change, grouped by owner (pod, policy, dispatch, static, sets). */
export function formatPlanDiff(plans: readonly FamilyPlan[]): string {
  const out: string[] = [];
  for (const plan of plans) {
    const groups = new Map<string, Change[]>();
    for (const c of plan.changes) groups.set(c.owner, [...(groups.get(c.owner) ?? []), c]);
    for (const owner of [...groups.keys()].sort()) {
      out.push(`### IPv${plan.family} ${owner}`);
      for (const c of groups.get(owner)!) out.push(formatChange(c));
    }
    for (const e of plan.errors) out.push(`!!! ${e}`);
  }
  return out.join('\n');
}

export function formatChange(c: Change): string {
  const label = `${c.object} ${c.name}`;
  const before = c.action === 'create' ? '/dev/null' : `a/${label}`;
  const after = c.action === 'delete' ? '/dev/null' : `b/${label}`;
  const patch = diffPackage().structuredPatch(before, after, joinLines(c.before), joinLines(c.after), '', '', { context: 2 });
  const lines = [`--- ${before}`, `+++ ${after}`];
  for (const hunk of patch.hunks) {
    lines.push(`@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`, ...hunk.lines);
  }
  return lines.join('\n');
}

const joinLines = (lines: readonly string[]): string => (lines.length ? `${lines.join('\n')}\n` : '');

/** Machine-readable form of the same diff (`--json`). */
export function planJson(plans: readonly FamilyPlan[]): unknown {
  return {
    summary: summarize(plans),
    families: plans.map((p) => ({ family: p.family, counts: p.counts, errors: p.errors, changes: p.changes })),
  };
}
