// Collects the address sets rules refer to: one per distinct canonical content, shared by every rule.

import type { IpFamily, IpSet, IpSetName, IpSetType } from '../model/index.js';
import { ipSetNameFor, type SetKind } from './names.js';

const TYPE_OF: Record<SetKind, IpSetType> = { s: 'hash:ip', n: 'hash:ip,port', b: 'hash:net' };

export class IpSetRegistry {
  private readonly sets = new Map<IpSetName, IpSet>();

  constructor(
    private readonly prefix: string,
    readonly family: IpFamily,
  ) {}

  /**
   * The set for `key` (canonical description of what it holds); `members` is computed only the first time.
   * Members are canonical `ipset save` strings.
   */
  request(kind: SetKind, key: string, description: string, members: () => Iterable<string>): IpSetName {
    const name = ipSetNameFor(this.prefix, this.family, kind, key);
    if (!this.sets.has(name)) {
      const unique = sortMembers(new Set(members()));
      this.sets.set(name, { name, type: TYPE_OF[kind], family: this.family, members: unique, description });
    }
    return name;
  }

  all(): IpSet[] {
    return [...this.sets.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  }
}

/** Order members the way humans read addresses (numeric within dotted quads), stable across runs. */
export function sortMembers(members: Iterable<string>): string[] {
  // Keys are computed once per member, not once per comparison: this sort runs over every set member.
  return [...members]
    .map((m) => [memberSortKey(m), m] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, m]) => m);
}

function memberSortKey(member: string): string {
  return member.replace(/\d+/g, (d) => d.padStart(5, '0'));
}
