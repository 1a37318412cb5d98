// The canonical form of a saved rule: prints that make the kernel do the same thing compare equal, and
// any change to what a rule matches or does compares different. Expectations follow iptables(8) and
// iptables-extensions(8): what each module defaults to, which options are tested before any match.

import { canonicalRuleForm, tokenize } from '../../../src/render/index.js';

const form = (text: string): string => canonicalRuleForm(tokenize(text));

const POLICY_RULE =
  '-p tcp -m comment --comment "nf:CCJuHzIjb7Knb00N default/p ingress:0" -m set --match-set nf4s:qioticnfsm73k72ejunf src ' +
  '-m multiport --dports 6379 -j MARK --set-xmark 0x10000/0x10000';

describe('canonicalRuleForm: the same rule printed another way', () => {
  const same: readonly [string, string, string][] = [
    [
      'matches in another order',
      POLICY_RULE,
      '-p tcp -m multiport --dports 6379 -m set --match-set nf4s:qioticnfsm73k72ejunf src -m comment --comment "nf:CCJuHzIjb7Knb00N default/p ingress:0" -j MARK --set-xmark 0x10000/0x10000',
    ],
    ['extra spaces and tabs', POLICY_RULE, `  ${POLICY_RULE.replaceAll(' -m ', '   -m\t')}  `],
    ['the protocol module printed although -p loads it', POLICY_RULE, POLICY_RULE.replace('-p tcp ', '-p tcp -m tcp ')],
    ['the implicit protocol module named', '-p tcp --dport 80 -j ACCEPT', '-p tcp -m tcp --dport 80 -j ACCEPT'],
    ['the protocol by number', POLICY_RULE, POLICY_RULE.replace('-p tcp', '-p 6')],
    ['the set module printing its default counter update', POLICY_RULE, POLICY_RULE.replace(' src ', ' src --update-counters ')],
    [
      'a list option in another order',
      '-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
      '-m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT',
    ],
    ['a full mark mask printed', '-m mark --mark 0x10000 -j ACCEPT', '-m mark --mark 0x10000/0xffffffff -j ACCEPT'],
    ['a mark in decimal', '-j MARK --set-xmark 0x0/0xf0000', '-j MARK --set-xmark 0/983040'],
    [
      'limit printing its default burst',
      '-m limit --limit 10/sec -j NFLOG --nflog-prefix x',
      '-m limit --limit 10/second --limit-burst 5 -j NFLOG --nflog-prefix x',
    ],
    ['NFLOG printing its default group', '-j NFLOG --nflog-prefix x', '-j NFLOG --nflog-prefix x --nflog-group 0'],
    ['REJECT without its default', '-j REJECT --reject-with icmp-port-unreachable', '-j REJECT'],
    ['a host address without /32', '-s 10.244.1.10/32 -j ACCEPT', '-s 10.244.1.10 -j ACCEPT'],
    ['address options in another order', '-s 10.0.0.0/8 -i cni0 -j ACCEPT', '-i cni0 -s 10.0.0.0/8 -j ACCEPT'],
    ['long option names', '-s 10.0.0.0/8 -p udp -j DROP', '--source 10.0.0.0/8 --protocol udp --jump DROP'],
    [
      'a comment moved past a limit (a comment matches every packet)',
      '-m comment --comment "nf:a" -m limit --limit 10/sec -j NFLOG --nflog-prefix x',
      '-m limit --limit 10/sec -m comment --comment "nf:a" -j NFLOG --nflog-prefix x',
    ],
    ['an address matching every source', '-m comment --comment "nf:a" -j DROP', '-s 0.0.0.0/0 -m comment --comment "nf:a" -j DROP'],
    ['an IPv6 address matching every destination', '-m comment --comment "nf:a" -j DROP', '-d ::/0 -m comment --comment "nf:a" -j DROP'],
    ['any protocol', '-m comment --comment "nf:a" -j DROP', '-p all -m comment --comment "nf:a" -j DROP'],
    ['any input interface', '-m comment --comment "nf:a" -j nf-FORWARD', '-i + -m comment --comment "nf:a" -j nf-FORWARD'],
    ['restore-style counters', '-s 10.0.0.0/8 -j DROP', '-c 12 3400 -s 10.0.0.0/8 -j DROP'],
    [
      'a module option spelled by its alias',
      '-p tcp -m multiport --dports 80,443 -j ACCEPT',
      '-p tcp -m multiport --destination-ports 443,80 -j ACCEPT',
    ],
  ];
  it.each(same)('%s', (_name, a, b) => {
    expect(form(b)).toBe(form(a));
  });
});

describe('canonicalRuleForm: a different rule', () => {
  const different: readonly [string, string, string][] = [
    ['another target', POLICY_RULE, POLICY_RULE.replace('-j MARK --set-xmark 0x10000/0x10000', '-j ACCEPT')],
    ['another set', POLICY_RULE, POLICY_RULE.replace('nf4s:qioticnfsm73k72ejunf', 'nf4s:vnw2r4uchal4wvhbiowi')],
    ['another set direction', POLICY_RULE, POLICY_RULE.replace(' src ', ' dst ')],
    ['a negated set', POLICY_RULE, POLICY_RULE.replace('-m set --match-set', '-m set ! --match-set')],
    ['a port of the protocol module changed', '-p tcp -m tcp --dport 80 -j ACCEPT', '-p tcp -m tcp --dport 81 -j ACCEPT'],
    ['another port', POLICY_RULE, POLICY_RULE.replace('6379', '6380')],
    ['another protocol', POLICY_RULE, POLICY_RULE.replace('-p tcp', '-p udp')],
    ['a match removed', POLICY_RULE, POLICY_RULE.replace('-m multiport --dports 6379 ', '')],
    ['another comment (identity)', POLICY_RULE, POLICY_RULE.replace('nf:CCJuHzIjb7Knb00N', 'nf:CCJuHzIjb7Knb00M')],
    ['set counters not updated (not the default)', POLICY_RULE, POLICY_RULE.replace(' src ', ' src ! --update-counters ')],
    ['nomatch entries returned as matches', POLICY_RULE, POLICY_RULE.replace(' src ', ' src --return-nomatch ')],
    ['a mark mask narrowed', '-m mark --mark 0x10000/0x10000 -j ACCEPT', '-m mark --mark 0x10000 -j ACCEPT'],
    [
      'a conntrack state added',
      '-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
      '-m conntrack --ctstate RELATED,ESTABLISHED,NEW -j ACCEPT',
    ],
    [
      'another burst',
      '-m limit --limit 10/sec -j NFLOG --nflog-prefix x',
      '-m limit --limit 10/sec --limit-burst 6 -j NFLOG --nflog-prefix x',
    ],
    ['another address', '-s 10.244.1.10/32 -j ACCEPT', '-s 10.244.1.11/32 -j ACCEPT'],
    ['a negated address', '-s 10.244.1.10/32 -j ACCEPT', '! -s 10.244.1.10/32 -j ACCEPT'],
    // The negation of what matches every packet matches none: the rule is switched off, comment kept.
    ...(
      [
        ['! -s 0.0.0.0/0', '-j DROP'],
        ['! -d 0.0.0.0/0', '-j DROP'],
        ['! -s ::/0', '-j DROP'],
        ['! --source ::/0', '-j DROP'],
        ['! -d ::/0', '-j DROP'],
        ['! -i +', '-j nf-FORWARD'],
        ['! -o +', '-j nf-FORWARD'],
        ['! --in-interface +', '-j nf-FORWARD'],
        ['! -p all', '-j DROP'],
        ['! -p 0', '-j DROP'],
      ] as const
    ).map(([negation, target]): [string, string, string] => [
      `${negation} added (matches nothing)`,
      `-m comment --comment "nf:a" ${target}`,
      `${negation} -m comment --comment "nf:a" ${target}`,
    ]),
    ['a negated address matching every source against one matching it', '-s 0.0.0.0/0 -j DROP', '! -s 0.0.0.0/0 -j DROP'],
    ['jump against goto', '-j nf-fw-a', '-g nf-fw-a'],
    // limit counts only the packets the matches before it let through: its place is part of the rule.
    [
      'a limit moved before another match',
      '-m set --match-set a src -m limit --limit 10/sec -j NFLOG --nflog-prefix x',
      '-m limit --limit 10/sec -m set --match-set a src -j NFLOG --nflog-prefix x',
    ],
    ['an unknown word', '-s 10.0.0.0/8 -j DROP', '-s 10.0.0.0/8 -j DROP --something-new'],
  ];
  it.each(different)('%s', (_name, a, b) => {
    expect(form(b)).not.toBe(form(a));
  });
});
