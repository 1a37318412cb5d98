// The churn benchmark's changes: a steady mix of what a busy cluster sends a node daemon. Each call to
// `next()` makes one API write (a pod replacement is a delete and a create, counted as one change):
//   4 in 10  a label flip: `bench-peer` toggled on a running pod anywhere (the bench policy's peer set
//            selects it in every namespace, so the pod enters or leaves an ipset),
//   3 in 10  a pod replaced by a new one with a new name and IP on the same node (a third of them on the
//            measured node, so workload chains come and go),
//   3 in 10  a port edit on an existing ingress policy (its first rule's first port).
// Deterministic for a seed; the probe pods (which the outside measurement flips) are left to it alone:
// never flipped here, never replaced.

import type { NetworkPolicy, Pod } from '../../src/model/index.js';
import type { KubeObject } from '../../test/fakes/fake-apiserver.js';
import { mulberry32 } from './prng.js';

type ChurnKind = 'label flip' | 'pod replaced' | 'policy port edit';

/** What the writer needs of an API server. */
interface ApiWrites {
  create(obj: KubeObject): unknown;
  update(obj: KubeObject): unknown;
  delete(obj: Pick<KubeObject, 'kind' | 'metadata'>): void;
}

interface ChurnInput {
  readonly pods: readonly Pod[];
  readonly policies: readonly NetworkPolicy[];
  /** Each node's /24 pod CIDR, for the replacements' new addresses. */
  readonly podCidrs: ReadonlyMap<string, string>;
  readonly node: string;
  readonly probePods: ReadonlySet<string>;
  readonly seed: number;
  readonly podObject: (p: Pod) => KubeObject;
  readonly policyObject: (p: NetworkPolicy) => KubeObject;
  /** Only label flips (the set-only path: no chain changes), instead of the mix. */
  readonly flipsOnly?: boolean;
}

export const PEER_LABEL = 'bench-peer';

/**
 * The churn's bench policy: it isolates the pods of `target`'s namespace and admits `bench-peer=on` pods of
 * every namespace, so every label flip anywhere moves a pod in or out of its peer set.
 */
export function churnBenchPolicy(target: Pod): NetworkPolicy {
  return {
    namespace: target.namespace,
    name: 'bench-churn',
    podSelector: { matchLabels: {}, matchExpressions: [] },
    policyTypes: ['Ingress'],
    ingress: [
      {
        peers: [
          {
            namespaceSelector: { matchLabels: {}, matchExpressions: [] },
            podSelector: { matchLabels: { [PEER_LABEL]: 'on' }, matchExpressions: [] },
          },
        ],
        ports: [{ protocol: 'TCP', port: 1000 }],
      },
    ],
  };
}

const key = (p: { namespace: string; name: string }): string => `${p.namespace}/${p.name}`;
const ordinary = (p: Pod): boolean => !p.hostNetwork && p.phase === 'Running' && p.ips.length > 0;

export class ChurnWriter {
  private readonly rng;
  private readonly pods: Pod[];
  private readonly local: number[] = [];
  private readonly remote: number[] = [];
  /** Every pod but the probes. */
  private readonly flippable: number[];
  /** Every policy as last written, by key; `editable` names those with a numeric first ingress port. */
  private readonly policies = new Map<string, NetworkPolicy>();
  private readonly editable: string[];
  /** Free addresses by node, oldest freed first, so a freed address is reused last. */
  private readonly free = new Map<string, string[]>();
  private replaced = 0;
  readonly counts: Record<ChurnKind, number> = { 'label flip': 0, 'pod replaced': 0, 'policy port edit': 0 };

  constructor(
    private readonly api: ApiWrites,
    private readonly input: ChurnInput,
  ) {
    this.rng = mulberry32(input.seed);
    this.pods = input.pods.filter(ordinary);
    this.pods.forEach((p, i) => {
      if (input.probePods.has(key(p))) return;
      (p.nodeName === input.node ? this.local : this.remote).push(i);
    });
    this.flippable = [...this.local, ...this.remote];
    const hasPort = (p: NetworkPolicy): boolean => typeof p.ingress?.[0]?.ports?.[0]?.port === 'number';
    for (const p of input.policies) this.policies.set(key(p), p);
    this.editable = input.policies.filter(hasPort).map(key);
    const used = new Set(input.pods.flatMap((p) => p.ips));
    for (const [node, cidr] of input.podCidrs) {
      const prefix = cidr.match(/^(\d+\.\d+\.\d+)\.0\/24$/)?.[1];
      if (!prefix) throw new Error(`node ${node}: pod CIDR ${cidr} is not a /24`);
      const addresses: string[] = [];
      for (let host = 2; host < 255; host++) if (!used.has(`${prefix}.${host}`)) addresses.push(`${prefix}.${host}`);
      this.free.set(node, addresses);
    }
    if (this.pods.length === 0 || this.local.length === 0 || this.remote.length === 0 || this.editable.length === 0)
      throw new Error('the cluster needs running pods on this node and others, and an ingress policy with a numeric port');
  }

  /** One change; returns its kind. */
  next(): ChurnKind {
    const roll = this.rng.int(10);
    const kind: ChurnKind = roll < 4 || this.input.flipsOnly === true ? 'label flip' : roll < 7 ? 'pod replaced' : 'policy port edit';
    if (kind === 'label flip') this.flip(this.rng.pick(this.flippable));
    else if (kind === 'pod replaced') this.replace(this.rng.chance(1 / 3) ? this.rng.pick(this.local) : this.rng.pick(this.remote));
    else this.editPort(this.rng.pick(this.editable));
    this.counts[kind]++;
    return kind;
  }

  /** Toggles the peer label of the pod named `podKey` (a probe pod); returns whether it is now on. */
  flipProbe(podKey: string): boolean {
    const index = this.pods.findIndex((p) => key(p) === podKey);
    if (index < 0) throw new Error(`no pod ${podKey}`);
    this.counts['label flip']++;
    return this.flip(index);
  }

  private flip(index: number): boolean {
    const pod = this.pods[index]!;
    const on = pod.labels[PEER_LABEL] !== 'on';
    const { [PEER_LABEL]: _old, ...rest } = pod.labels;
    const next: Pod = { ...pod, labels: on ? { ...rest, [PEER_LABEL]: 'on' } : rest };
    this.pods[index] = next;
    this.api.update(this.input.podObject(next));
    return on;
  }

  private replace(index: number): void {
    const old = this.pods[index]!;
    const free = this.free.get(old.nodeName!)!;
    const ip = free.shift();
    if (ip === undefined) throw new Error(`node ${old.nodeName} has no free pod address`);
    free.push(old.ips[0]!);
    const name = `${old.name.replace(/-c\d+$/, '')}-c${++this.replaced}`;
    const fresh: Pod = { ...old, name, ips: [ip] };
    this.api.delete({ kind: 'Pod', metadata: { name: old.name, namespace: old.namespace } });
    this.api.create(this.input.podObject(fresh));
    this.pods[index] = fresh;
  }

  /** The pods and policies as the API server now holds them (the writes so far applied to the input). */
  current(): { pods: Pod[]; policies: NetworkPolicy[] } {
    return { pods: [...this.input.pods.filter((p) => !ordinary(p)), ...this.pods], policies: [...this.policies.values()] };
  }

  private editPort(policyKey: string): void {
    const policy = this.policies.get(policyKey)!;
    const [first, ...rest] = policy.ingress!;
    const [port, ...ports] = first!.ports!;
    const current = port!.port as number;
    // Another port every time (10000–59999), never a range, so the rule's match always changes.
    const edited = { protocol: port!.protocol, port: 10_000 + ((current + 1 + this.rng.int(997)) % 50_000) };
    const next: NetworkPolicy = { ...policy, ingress: [{ ...first!, ports: [edited, ...ports] }, ...rest] };
    this.policies.set(policyKey, next);
    this.api.update(this.input.policyObject(next));
  }
}
