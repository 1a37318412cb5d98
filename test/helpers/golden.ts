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
  };
}

export const EXPECTED_FILES = { ipsets: 'expected.ipsets', rules: 'expected.rules', problems: 'expected.problems' } as const;
