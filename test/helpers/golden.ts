// The golden corpus (rules/<case>/): how a case is compiled, shared by the tests and scripts/update-golden.ts.

import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { loadManifests } from '../../src/cluster/manifests.js';
import { compile, type CompileResult } from '../../src/compile/index.js';
import { defaultNodeSettings, formatProblem, type ClusterSnapshot, type NodeSettings } from '../../src/model/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../src/render/index.js';

export const RULES_DIR = fileURLToPath(new URL('../../rules/', import.meta.url));
export const GOLDEN_NODE = 'node-1';

export interface PacketCase {
  readonly name: string;
  readonly from: string;
  readonly to: string;
  readonly proto: 'tcp' | 'udp' | 'sctp';
  readonly port: number;
  readonly expect: 'ACCEPT' | 'DROP';
  /** 6: a named pod stands for its IPv6 address and the IPv6 ruleset judges the packet. Default 4 (an address literal's family wins). */
  readonly family?: 4 | 6;
}

/** The IPv6 half of a dual-stack case: node-1 has an IPv6 pod CIDR, so `compile --family 6` prints it. */
export interface GoldenV6 {
  readonly ipsets: string;
  readonly rules: string;
}

export interface GoldenCase {
  readonly name: string;
  readonly dir: string;
  readonly snapshot: ClusterSnapshot;
  readonly settings: NodeSettings;
  readonly result: CompileResult;
  /** What `netfence compile` prints for the case. */
  readonly ipsets: string;
  readonly rules: string;
  readonly problems: string;
  readonly packets: readonly PacketCase[];
  /** Present when node-1 has an IPv6 pod CIDR (a dual-stack case): expected6.ipsets, expected6.rules. */
  readonly v6?: GoldenV6;
}

export const goldenCaseNames = (): string[] =>
  readdirSync(RULES_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(RULES_DIR, d.name, 'cluster.yaml')))
    .map((d) => d.name)
    .sort();

export function loadGoldenCase(name: string): GoldenCase {
  const dir = join(RULES_DIR, name);
  const loaded = loadManifests([join(dir, 'cluster.yaml')]);
  const podCidrs = loaded.snapshot.nodes.find((n) => n.name === GOLDEN_NODE)?.podCidrs ?? [];
  const settings = defaultNodeSettings(GOLDEN_NODE, podCidrs);
  const result = compile(loaded.snapshot, settings);
  // File paths in problems are made relative so the corpus does not depend on where it is checked out.
  const problems = [...loaded.problems, ...result.problems].map((p) => `${formatProblem(p).replace(dir + '/', '')}\n`).join('');
  const packetsFile = join(dir, 'packets.yaml');
  const packets = existsSync(packetsFile) ? (parseYaml(readFileSync(packetsFile, 'utf8')) as PacketCase[]) : [];
  return {
    name,
    dir,
    snapshot: loaded.snapshot,
    settings,
    result,
    ipsets: renderIpsetRestore(result.desired.v4.ipsets),
    rules: renderFullRestore(result.desired.v4),
    problems,
    packets,
    ...(podCidrs.some((c) => c.includes(':'))
      ? { v6: { ipsets: renderIpsetRestore(result.desired.v6.ipsets), rules: renderFullRestore(result.desired.v6) } }
      : {}),
  };
}

export const EXPECTED_FILES = { ipsets: 'expected.ipsets', rules: 'expected.rules', problems: 'expected.problems' } as const;
/** The ip6tables-restore payload and inet6 sets of a dual-stack case. */
export const EXPECTED6_FILES = { ipsets: 'expected6.ipsets', rules: 'expected6.rules' } as const;

/** A packet end: `ns/pod` becomes the pod's address of the family, an address stays itself. */
export function packetAddress(c: Pick<GoldenCase, 'snapshot'>, ref: string, family: 4 | 6): string {
  if (!ref.includes('/')) return ref;
  const [ns, pod] = ref.split('/');
  const found = c.snapshot.pods.find((p) => p.namespace === ns && p.name === pod);
  const ip = found?.ips.find((a) => a.includes(':') === (family === 6));
  if (!ip) throw new Error(`packets.yaml names ${ref}, which is no pod with an IPv${family} address`);
  return ip;
}

/** The family a packet is judged in: its address literals', else its `family`, else 4. */
export function packetFamily(p: PacketCase): 4 | 6 {
  const literal = [p.from, p.to].find((r) => !r.includes('/'));
  if (literal) return literal.includes(':') ? 6 : 4;
  return p.family ?? 4;
}
