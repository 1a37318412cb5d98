// `diff`'s planning against saved dumps (`--saved FILE…`): each family's filter table read as the planner
// observes the kernel, planned against the desired state. (Against the live kernel, the syncer plans:
// kernel-read.ts.)

import type { DesiredState, FamilyState, IpFamily } from '../model/index.js';
import { formatPlanDiff, formatSummary, planJson, summarize } from '../plan/diff.js';
import { observeFamily, planFamily, type FamilyPlan, type ObservedFamily, type Ownership } from '../plan/index.js';
import { asSaveText, IpsetParseError, SaveParseError, SavedDumpError } from '../render/index.js';
import { familyState } from './compile.js';
import { readSavedDumps } from './saved-dump.js';

export interface SavedDumpPlans {
  /** One plan per family the dump has, IPv4 first. */
  readonly plans: readonly FamilyPlan[];
  /** Families the desired state has content in but the dump lacks: not compared, so not "in sync". */
  readonly notCompared: readonly IpFamily[];
  /** The dump, for messages (`saved dump FILE`). */
  readonly label: string;
}

/** Plans against the saved files; a SavedDumpError names the file or table that cannot be read. */
export async function planAgainstSavedDumps(desired: DesiredState, paths: readonly string[], own: Ownership): Promise<SavedDumpPlans> {
  const dump = await readSavedDumps(paths, own.ipsetPrefix);
  const plans = [...dump.filters.values()]
    .sort((a, b) => a.family - b.family)
    .map((table) => {
      let observed: ObservedFamily;
      try {
        // `netfence compile` output is a restore payload (`-I FORWARD 1`): read it as the save it becomes.
        observed = observeFamily(table.family, asSaveText(table.text), dump.ipsets, own);
      } catch (err) {
        if (!(err instanceof SaveParseError || err instanceof IpsetParseError)) throw err;
        throw new SavedDumpError(`the IPv${table.family} *filter table at ${table.where}: ${err.message}`);
      }
      return planFamily(familyState(desired, table.family), observed, own);
    });
  const notCompared = ([4, 6] as const).filter((f) => !dump.filters.has(f) && hasContent(familyState(desired, f)));
  return { plans, notCompared, label: dump.label };
}

const hasContent = (s: FamilyState): boolean => s.chains.length > 0 || s.ipsets.length > 0 || s.hooks.length > 0;

/** The plans as `diff` and `apply` print them: the one-line summary, and (computed when asked) the changes or the JSON form. */
export interface PlansReport {
  readonly inSync: boolean;
  /** `differs: …` or `in sync: …`. */
  readonly summary: string;
  /** One line per change, grouped by owner; empty when in sync. */
  readonly changes: () => string;
  readonly json: () => object;
}

export function reportPlans(plans: readonly FamilyPlan[]): PlansReport {
  const summary = summarize(plans);
  return {
    inSync: summary.inSync,
    summary: formatSummary(summary),
    changes: () => formatPlanDiff(plans),
    json: () => planJson(plans) as object,
  };
}
