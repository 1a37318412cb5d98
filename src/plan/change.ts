// What a plan changes, object by object: the diff and the JSON output show these, the counts sum them.

export type ChangeObject = 'chain' | 'set' | 'hook';
export type ChangeAction = 'create' | 'update' | 'delete';

export interface Change {
  readonly object: ChangeObject;
  readonly name: string;
  readonly action: ChangeAction;
  readonly before: readonly string[];
  readonly after: readonly string[];
  /** Who the object belongs to, for grouping: `pod ns/name`, `policy ns/name`, `dispatch`, `static`, a set's meaning. */
  readonly owner: string;
}

export interface PlanCounts {
  readonly chainsWritten: number;
  readonly rulesWritten: number;
  readonly chainsDeleted: number;
  readonly hooksWritten: number;
  readonly setsCreated: number;
  readonly setsRewritten: number;
  readonly setsDestroyed: number;
  readonly membersAdded: number;
  readonly membersRemoved: number;
}

/** A change whose before and after lines are computed only if someone reads them. */
export function lazyLines(
  head: Pick<Change, 'object' | 'name' | 'action' | 'owner'>,
  before: () => readonly string[],
  after: () => readonly string[],
): Change {
  let b: readonly string[] | undefined;
  let a: readonly string[] | undefined;
  return {
    ...head,
    get before() {
      return (b ??= before());
    },
    get after() {
      return (a ??= after());
    },
  };
}
