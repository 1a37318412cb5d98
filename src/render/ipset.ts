// ipsets ↔ `ipset restore` / `ipset save` text.

import type { IpFamily, IpSet, IpSetName } from '../model/index.js';

/** Large enough for any cluster; a changed maxelem makes `create -exist` fail loudly (limits.md). */
export const IPSET_MAXELEM = 1048576;

/**
 * One `ipset restore` command. Every line of ipset restore text netfence writes is one of these, rendered
 * by `renderIpsetOps` below (beside `parseIpsetSave`, which reads the same text back). `add`/`del` carry
 * a set's members as one list: a large set is one op, not an object per member.
 */
export type IpsetOp =
  | {
      readonly op: 'create';
      readonly name: string;
      readonly set: Pick<IpSet, 'type' | 'family' | 'learned'>;
      /** The maxelem a set was created with (kept when priming an existing set); default IPSET_MAXELEM. */
      readonly maxelem?: number;
      /**
       * The set exists already: the line is written only so `ipset restore` batches the member lines after it
       * (limits.md §2). A writer that does not batch by lines (netlink) skips it.
       */
      readonly prime?: true;
    }
  | { readonly op: 'add'; readonly name: string; readonly members: readonly string[] }
  | { readonly op: 'del'; readonly name: string; readonly members: readonly string[] }
  | { readonly op: 'flush'; readonly name: string }
  | { readonly op: 'swap'; readonly name: string; readonly with: string }
  | { readonly op: 'destroy'; readonly name: string };

const renderIpsetOp: { [K in IpsetOp['op']]: (o: Extract<IpsetOp, { op: K }>, out: string[]) => void } = {
  create: (o, out) => {
    const learned = o.set.learned;
    // A learned set: entries time out on their own and carry their provenance as a comment (model/dns-egress.ts).
    const options = learned ? ` timeout ${learned.timeout} comment` : '';
    out.push(
      `create ${o.name} ${o.set.type} family ${o.set.family === 4 ? 'inet' : 'inet6'} hashsize 1024 maxelem ${o.maxelem ?? learned?.maxelem ?? IPSET_MAXELEM}${options}`,
    );
  },
  add: (o, out) => {
    for (const m of o.members) out.push(`add ${o.name} ${m}`);
  },
  del: (o, out) => {
    // `ipset del` takes the element alone: a member someone added with options (`10.0.0.5 nomatch`, saved
    // so) is deleted as `10.0.0.5`; with the options the line is refused ("Unknown argument").
    for (const m of o.members) out.push(`del ${o.name} ${elementOf(m)}`);
  },
  flush: (o, out) => {
    out.push(`flush ${o.name}`);
  },
  swap: (o, out) => {
    out.push(`swap ${o.name} ${o.with}`);
  },
  destroy: (o, out) => {
    out.push(`destroy ${o.name}`);
  },
};

/** A saved member without its options: `10.0.0.5 nomatch` → `10.0.0.5`. */
const elementOf = (member: string): string => {
  const space = member.search(/\s/);
  return space < 0 ? member : member.slice(0, space);
};

/** `ipset list -n`: one set name a line. */
export const parseIpsetNames = (text: string): string[] =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

/** `ipset restore` input for `ops`, one line each (a newline after the last); '' for none. */
export function renderIpsetOps(ops: readonly IpsetOp[]): string {
  const out: string[] = [];
  for (const o of ops) (renderIpsetOp[o.op] as (o: IpsetOp, out: string[]) => void)(o, out);
  return out.length ? `${out.join('\n')}\n` : '';
}

/** Whether `renderIpsetOps(ops)` writes any line: every op is one line, except an add or del of no members. */
export const writesIpsetLines = (ops: readonly IpsetOp[]): boolean =>
  ops.some((o) => (o.op !== 'add' && o.op !== 'del') || o.members.length > 0);

/** Create `set` (under `name`, e.g. a temp set) and fill it with the set's members. */
export const createWithMembers = (
  set: Pick<IpSet, 'name' | 'type' | 'family' | 'members' | 'learned'>,
  name: string = set.name,
): IpsetOp[] => [
  { op: 'create', name, set },
  { op: 'add', name, members: set.members },
];

/** A full `ipset restore` input that creates every set with its members (the `compile` view). */
export function renderIpsetRestore(sets: readonly IpSet[]): string {
  return renderIpsetOps(sets.flatMap((set) => createWithMembers(set)));
}

export interface SavedIpSet {
  readonly name: IpSetName;
  /** An IpSetType for our sets; whatever `ipset save` printed for a foreign one. */
  readonly type: string;
  readonly family: IpFamily;
  readonly maxelem?: number;
  /** `timeout N` on the create line: the set's entries expire (learned sets). */
  readonly timeout?: number;
  /** `comment` on the create line: its entries carry a comment. */
  readonly comment?: true;
  readonly members: string[];
}

/** One saved member of a set with timeouts and comments: `198.51.100.10 timeout 42 comment "1700000000 good.example"`. */
export interface SavedEntry {
  readonly element: string;
  /** Seconds left before the kernel removes it (a counting-down value: never compared as drift). */
  readonly timeout?: number;
  readonly comment?: string;
}

/** A saved member taken apart: the element, its remaining timeout and its comment (unquoted). */
export function savedEntryOf(member: string): SavedEntry {
  const text = member.trim();
  const space = text.search(/\s/);
  if (space < 0) return { element: text };
  const rest = text.slice(space);
  const timeout = /\stimeout\s+(\d+)/.exec(rest);
  const comment = /\scomment\s+"((?:[^"\\]|\\.)*)"/.exec(rest);
  return {
    element: text.slice(0, space),
    ...(timeout ? { timeout: Number(timeout[1]) } : {}),
    ...(comment ? { comment: comment[1]!.replace(/\\(.)/g, '$1') } : {}),
  };
}

/**
 * The members of the named sets in an `ipset save` of a whole namespace, taken apart (`savedEntryOf`). Only those
 * sets' member lines are read: the node's other sets (most of a large dump) are skipped line by line, never
 * parsed or kept.
 */
export function savedMembersOf(text: string, names: ReadonlySet<string>): Map<string, SavedEntry[]> {
  const members = new Map<string, SavedEntry[]>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('add ')) continue;
    const space = line.indexOf(' ', 4);
    const name = space > 4 ? line.slice(4, space) : '';
    if (!names.has(name)) continue;
    const list = members.get(name) ?? [];
    list.push(savedEntryOf(line.slice(space + 1)));
    members.set(name, list);
  }
  return members;
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
    const created = verb === 'create' ? setOfCreate(words) : undefined;
    if (created) sets.set(created.name, { ...created, members: [] });
    else if (verb === 'add' && name) {
      const set = sets.get(name);
      if (!set) throw new IpsetParseError(i + 1, `member of undeclared set ${name}`);
      set.members.push(words.slice(2).join(' '));
    } else {
      throw new IpsetParseError(i + 1, `unexpected line "${line.slice(0, 60)}" (not ipset save output?)`);
    }
  });
  return sets;
}

/** The set a `create NAME TYPE [options]` line (split into words) declares; undefined for anything else. */
function setOfCreate(words: readonly string[]): Omit<SavedIpSet, 'members'> | undefined {
  const [verb, name, type] = words;
  if (verb !== 'create' || !name || !type) return undefined;
  const opt = (key: string) => {
    const at = words.indexOf(key);
    return at > 0 ? words[at + 1] : undefined;
  };
  const maxelem = opt('maxelem');
  const timeout = opt('timeout');
  return {
    name: name as IpSetName,
    type,
    family: opt('family') === 'inet6' ? 6 : 4,
    ...(maxelem ? { maxelem: Number(maxelem) } : {}),
    ...(timeout ? { timeout: Number(timeout) } : {}),
    ...(words.includes('comment') ? { comment: true as const } : {}),
  };
}

/** Each set's family, from the `create` lines of an `ipset save`; other lines are skipped, never an error. */
export function ipsetFamilies(lines: readonly string[]): Map<string, IpFamily> {
  const families = new Map<string, IpFamily>();
  for (const line of lines) {
    const set = setOfCreate(line.trim().split(/\s+/));
    if (set) families.set(set.name, set.family);
  }
  return families;
}
