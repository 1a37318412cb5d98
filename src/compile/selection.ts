// The pods one selector peer matches (a Selection), with a bounded journal of what changed in it, so a
// compile re-renders only what a change touched. ClusterState keeps one entry per peer key.

import type { Pod, PolicyPeer } from '../model/index.js';

/** One pod entering, leaving or changing inside a selection (`before`/`after` absent: not in it then). */
export interface SelectionChange {
  readonly version: number;
  readonly before?: Pod | undefined;
  readonly after?: Pod | undefined;
}

/** The pods one selector peer matches, and a version that moves whenever any of them changes. */
export interface Selection {
  readonly key: string;
  readonly pods: ReadonlyMap<string, Pod>;
  readonly version: number;
  /** What changed after `version`, oldest first; undefined when that is no longer remembered. */
  changesSince(version: number): readonly SelectionChange[] | undefined;
}

/** How many changes a selection remembers: enough for the batches between two compiles. */
const JOURNAL_MAX = 256;

export class SelectionEntry implements Selection {
  readonly pods = new Map<string, Pod>();
  used = true;
  private journal: SelectionChange[] = [];
  /** The journal holds every change with a version above this one. */
  private journalFrom: number;

  constructor(
    readonly key: string,
    readonly peer: PolicyPeer,
    readonly namespace: string,
    public version: number,
  ) {
    this.journalFrom = version;
  }

  record(version: number, before: Pod | undefined, after: Pod | undefined): void {
    this.version = version;
    this.journal.push({ version, before, after });
    if (this.journal.length > JOURNAL_MAX) {
      const dropped = this.journal.splice(0, this.journal.length - JOURNAL_MAX / 2);
      this.journalFrom = dropped.at(-1)!.version;
    }
  }

  changesSince(version: number): readonly SelectionChange[] | undefined {
    if (version < this.journalFrom) return undefined;
    let i = this.journal.length;
    while (i > 0 && this.journal[i - 1]!.version > version) i--;
    return this.journal.slice(i);
  }
}
