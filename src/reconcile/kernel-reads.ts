// The syncer's reads of the kernel: one `ipset save` and one `iptables-save` per family, run side by side,
// parsed unless the kernel printed exactly what it printed last time (a drift timer's usual case), and the
// check that a read shows exactly what we programmed (sameObserved), remembered for the last pair.

import { sha256, type IpFamily } from '../model/index.js';
import { observeFamily, sameRule, sameRules, type ObservedFamily, type Ownership } from '../plan/index.js';
import { saveWithoutComments } from '../render/index.js';
import { detachObserved } from './detach.js';
import type { KernelPort } from './kernel-port.js';

/** One `ipset save` and the filter table of each family, as the tools printed them. */
export interface KernelTexts {
  readonly ipsetText: string;
  readonly saves: readonly string[];
}

export class KernelReads {
  /**
   * The last read's texts as SHA-256 digests, with what they parsed to. Digests, not the texts: at 50,000 pods
   * `ipset save` alone is 7 MB the daemon would keep between drift checks; hashing it takes ~7 ms here.
   */
  private readonly lastRead = new Map<
    IpFamily,
    { readonly iptables: string; readonly ipsets: string; readonly observed: ObservedFamily }
  >();
  private lastMatch: { readonly programmed: ObservedFamily; readonly fresh: ObservedFamily } | undefined;

  constructor(
    private readonly kernel: Pick<KernelPort, 'ipsetSave' | 'saveFilter'>,
    private readonly own: Ownership,
  ) {}

  /** Reads and parses now. */
  async now(families: readonly IpFamily[]): Promise<Map<IpFamily, ObservedFamily>> {
    return this.parse(families, await this.texts(families));
  }

  parse(families: readonly IpFamily[], { ipsetText, saves }: KernelTexts): Map<IpFamily, ObservedFamily> {
    const ipsetDigest = digest(ipsetText);
    return new Map(families.map((family, i) => [family, this.observe(family, saves[i]!, ipsetText, ipsetDigest)]));
  }

  async texts(families: readonly IpFamily[]): Promise<KernelTexts> {
    const [ipsetText, ...saves] = await Promise.all([this.kernel.ipsetSave(), ...families.map((f) => this.kernel.saveFilter(f))]);
    return { ipsetText, saves };
  }

  /** sameObserved, remembered for the last pair: an unchanged kernel is compared once, not on every tick. */
  matchesProgrammed(programmed: ObservedFamily, fresh: ObservedFamily): boolean {
    if (this.lastMatch?.programmed === programmed && this.lastMatch.fresh === fresh) return true;
    if (!sameObserved(programmed, fresh)) return false;
    this.lastMatch = { programmed, fresh: this.rememberAsProgrammed(programmed, fresh) };
    return true;
  }

  /** Parses a read, unless the kernel printed exactly what it printed last time (a drift timer's usual case). */
  private observe(family: IpFamily, iptablesSave: string, ipsetSave: string, ipsetDigest: string): ObservedFamily {
    const iptables = digest(saveWithoutComments(iptablesSave));
    const last = this.lastRead.get(family);
    if (last && last.iptables === iptables && last.ipsets === ipsetDigest) return last.observed;
    // Kept until the next read: detached, so it does not hold the texts it was parsed from (detach.ts).
    const observed = detachObserved(observeFamily(family, iptablesSave, ipsetSave, this.own));
    this.lastRead.set(family, { iptables, ipsets: ipsetDigest, observed });
    return observed;
  }

  /**
   * The read matches what we programmed (the steady state), so the remembered read may hold programmed's
   * chains, hooks and set members instead of its own parsed copies of them: equal by sameObserved, and at
   * 50,000 pods the copy is ~7 MiB. What sameObserved does not compare (policies, foreign rules, set
   * headers such as maxelem) stays as read.
   */
  private rememberAsProgrammed(programmed: ObservedFamily, fresh: ObservedFamily): ObservedFamily {
    const last = this.lastRead.get(fresh.family);
    if (last?.observed !== fresh) return fresh;
    const ipsets = new Map([...fresh.ipsets].map(([name, set]) => [name, { ...set, members: programmed.ipsets.get(name)!.members }]));
    const shared: ObservedFamily = { ...fresh, chains: programmed.chains, hooks: programmed.hooks, ipsets };
    this.lastRead.set(fresh.family, { ...last, observed: shared });
    return shared;
  }
}

/**
 * Same chains, hooks and set members: what we own is exactly as we left it (`a` what we programmed, `b` a
 * read). Rules are compared by identity and meaning (plan/rule-identity.ts), not by how they are printed.
 */
export function sameObserved(a: ObservedFamily, b: ObservedFamily): boolean {
  const sameList = (x: readonly string[] | undefined, y: readonly string[] | undefined) =>
    x !== undefined && y !== undefined && x.length === y.length && x.every((v, i) => v === y[i]);
  if (a.chains.size !== b.chains.size || a.ipsets.size !== b.ipsets.size || a.hooks.size !== b.hooks.size) return false;
  for (const [name, rules] of a.chains) if (!sameRules(b.chains.get(name), rules)) return false;
  for (const [name, set] of a.ipsets) {
    const other = b.ipsets.get(name);
    if (set.type !== other?.type || set.family !== other.family) return false;
    // A learned set (timeout and comment): its members are the DNS agent's, its options are ours.
    if (set.timeout !== undefined || other.timeout !== undefined) {
      if (set.timeout !== other.timeout || set.maxelem !== other.maxelem || set.comment !== other.comment) return false;
    } else if (!sameList(set.members, other.members)) return false;
  }
  for (const [chain, hooks] of a.hooks) {
    const other = b.hooks.get(chain);
    if (other?.length !== hooks.length) return false;
    if (!hooks.every((h, i) => other[i]!.position === h.position && sameRule(other[i]!.rule, h.rule))) return false;
  }
  return true;
}

const digest = (text: string): string => sha256(text, 'base64');
