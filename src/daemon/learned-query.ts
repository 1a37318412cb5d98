// `/learned`'s answer (observe/learned-answer.ts): the pod's learned sets come from the DNS agent's current plan,
// their members from the kernel (`ipset save SET`), because the kernel is the truth: members and their
// provenance comments outlive a daemon restart, while the agent's own record (dns/learned.ts) keeps only each
// entry's lifetime (read back at start, learned-seed.ts), no names. The query is checked before anything runs;
// at most MAX_LEARNED_SETS sets are read.

import type { DnsLearningPlan } from '../model/index.js';
import { parseIp, parseLearnedComment } from '../model/index.js';
import { MAX_LEARNED_SETS, type LearnedAnswer, type LearnedMemberAnswer } from '../observe/learned-answer.js';
import { parseIpsetSave, savedEntryOf } from '../render/index.js';

export interface LearnedQueryOptions {
  /** The plan the DNS agent follows (undefined: no `domainNames` rule on this node). */
  readonly plan: () => DnsLearningPlan | undefined;
  /** `ipset save SET` of the node's namespace. */
  readonly readSet: (name: string) => Promise<string>;
  readonly now: () => number;
}

const POD = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export function learnedQuery(opts: LearnedQueryOptions): (query: URLSearchParams) => Promise<LearnedAnswer | { error: string }> {
  return async (query) => {
    const pod = query.get('pod') ?? '';
    const address = query.get('address') ?? '';
    if (!POD.test(pod)) return { error: 'pod must be NAMESPACE/NAME' };
    // Length first: parseIp remembers what it parsed, and a client's text must not grow that memory.
    const ip = address.length <= 45 ? parseIp(address) : undefined;
    if (!ip) return { error: 'address must be an IPv4 or IPv6 address' };
    const sets = (opts.plan()?.sets ?? []).filter((s) => s.pod === pod && s.family === ip.family).slice(0, MAX_LEARNED_SETS);
    const readAt = opts.now();
    const learned: LearnedMemberAnswer[] = [];
    for (const set of sets) {
      let text: string;
      try {
        text = await opts.readSet(set.setName);
      } catch {
        // Gone between the plan and the read (its rule was just removed): it holds nothing.
        continue;
      }
      const saved = parseIpsetSave(text).get(set.setName);
      const member = saved?.members.map(savedEntryOf).find((e) => {
        const m = parseIp(e.element);
        return m !== undefined && m.family === ip.family && m.value === ip.value;
      });
      if (!member) continue;
      const provenance = member.comment !== undefined ? parseLearnedComment(member.comment) : undefined;
      learned.push({
        set: set.setName,
        policy: set.policy,
        rule: `egress:${set.ruleIndex}${set.ruleName !== undefined ? ` ${set.ruleName}` : ''}`,
        ...(provenance ? { name: provenance.name, learnedAt: provenance.learnedAt } : {}),
        ...(member.timeout !== undefined ? { remainingSeconds: member.timeout } : {}),
      });
    }
    const names = [...new Set(sets.flatMap((s) => s.domainNames))];
    return { pod, address, readAt, sets: sets.length, names, learned };
  };
}
