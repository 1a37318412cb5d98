// ipsets ↔ `ipset restore` / `ipset save` text.

import type { IpFamily, IpSet, IpSetName } from '../model/index.js';

/** Large enough for any cluster; a changed maxelem makes `create -exist` fail loudly (limits.md). */
export const IPSET_MAXELEM = 1048576;

export function createLine(set: Pick<IpSet, 'name' | 'type' | 'family'>, name: string = set.name): string {
  return `create ${name} ${set.type} family ${set.family === 4 ? 'inet' : 'inet6'} hashsize 1024 maxelem ${IPSET_MAXELEM}`;
}

/** A full `ipset restore` input that creates every set with its members (the `compile` view). */
export function renderIpsetRestore(sets: readonly IpSet[]): string {
  const out: string[] = [];
  for (const set of sets) {
    out.push(createLine(set));
    for (const member of set.members) out.push(`add ${set.name} ${member}`);
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

export interface SavedIpSet {
  readonly name: IpSetName;
  /** An IpSetType for our sets; whatever `ipset save` printed for a foreign one. */
  readonly type: string;
  readonly family: IpFamily;
  readonly maxelem?: number;
  readonly members: string[];
}

export class IpsetParseError extends Error {
  override readonly name = 'IpsetParseError';
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`ipset save input line ${line}: ${message}`);
  }
}

/** Parses `ipset save` output (also the `ipset restore` text we render). Members keep ipset's own text. */
export function parseIpsetSave(text: string): Map<string, SavedIpSet> {
  const sets = new Map<string, SavedIpSet>();
  text.split('\n').forEach((raw, i) => {
    // Members are nearly every line of a large dump: take them apart without a regex.
    if (raw.startsWith('add ')) {
      const space = raw.indexOf(' ', 4);
      const set = space > 4 ? sets.get(raw.slice(4, space)) : undefined;
      const member = space > 4 ? raw.slice(space + 1).trim() : '';
      // A member with options (`10.0.0.0/8 nomatch`) takes the general path below.
      if (set && member !== '' && !member.includes(' ') && !member.includes('\t')) {
        set.members.push(member);
        return;
      }
    }
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const words = line.split(/\s+/);
    const [verb, name] = words;
    if (verb === 'create' && name && words[2]) {
      const opt = (key: string) => {
        const at = words.indexOf(key);
        return at > 0 ? words[at + 1] : undefined;
      };
      const maxelem = opt('maxelem');
      sets.set(name, {
        name: name as IpSetName,
        type: words[2],
        family: opt('family') === 'inet6' ? 6 : 4,
        ...(maxelem ? { maxelem: Number(maxelem) } : {}),
        members: [],
      });
    } else if (verb === 'add' && name) {
      const set = sets.get(name);
      if (!set) throw new IpsetParseError(i + 1, `member of undeclared set ${name}`);
      set.members.push(words.slice(2).join(' '));
    } else {
      throw new IpsetParseError(i + 1, `unexpected line "${line.slice(0, 60)}" (not ipset save output?)`);
    }
  });
  return sets;
}
