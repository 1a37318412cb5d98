// Where the daemon's bytes are: the structures it keeps, built one after another in this process from a
// generated cluster, each measured as the growth of the V8 heap after a full GC.
//
// Usage: node --expose-gc --import ./scripts/register-ts.mjs scripts/bench-memory.ts [--tier xl] [--seed 1]
//
// The same steps the daemon takes (kube-source.ts → source.ts → reconciler → syncer), without the API
// server or kernel: (1) the API objects as a list holds them (slimObject of JSON the way the API
// sends it), (2) the converted model objects in the ObjectStore, (3) the compiler's state and the desired
// state after the first compile, (4) the restore texts of the first sync, (5) the kernel tracker's
// parsed view of them. Heap figures are V8's `usedHeapSize` plus external/array buffers; the process RSS
// also holds code, the V8 heap's free space, and Node itself (~40 MiB): scripts/bench-daemon.ts measures it.

import { generateCluster, type Tier } from './bench-lib/generator.js';
import { convert } from '../src/cluster/convert.js';
import type { ObjectKind } from '../src/cluster/object-kind.js';
import { slimObject } from '../src/cluster/slim.js';
import { ObjectStore } from '../src/cluster/source.js';
import { Compiler } from '../src/compile/index.js';
import { expectedObserved } from '../src/plan/index.js';
import { renderFullRestore, renderIpsetRestore } from '../src/render/index.js';
import type { KubernetesObject } from '@kubernetes/client-node';
import { snapshotObjects } from './bench-daemon.js';
import { parseBenchFlags } from './lib/bench-args.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('run with node --expose-gc');
  process.exit(2);
}

const heap = (): number => {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return m.heapUsed + m.external + m.arrayBuffers;
};
const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

export interface MemoryRow {
  readonly what: string;
  readonly bytes: number;
  readonly perPod: number;
}

function serialized(tier: Tier, seed: number) {
  const { snapshot, settings, stats } = generateCluster({ tier, seed, node: 'node-1' });
  return { wire: snapshotObjects(snapshot).map((o) => JSON.stringify(o)), settings, pods: stats.pods, policies: stats.policies };
}

export function memoryRows(tier: Tier, seed: number): { rows: MemoryRow[]; pods: number; policies: number; rssMiB: number } {
  // The API objects, serialized: parsed one at a time below, as a watch stream delivers them.
  const { wire, settings, pods, policies } = serialized(tier, seed);
  const rows: MemoryRow[] = [];
  let last = heap();
  const step = (what: string): void => {
    const now = heap();
    rows.push({ what, bytes: now - last, perPod: (now - last) / pods });
    last = now;
  };

  const decoded = wire.map((text) => {
    const obj = JSON.parse(text) as KubernetesObject;
    return slimObject(obj.kind as ObjectKind, obj);
  });
  step('decoded list (slimmed API objects, before conversion)');
  wire.length = 0; // the texts existed before the first figure was taken; drop them before the next
  last = heap();

  const store = new ObjectStore();
  for (const obj of decoded) {
    const kind = obj.kind as ObjectKind;
    const r = convert(kind, obj);
    if (!r.ok) continue;
    const key = kind === 'Namespace' || kind === 'Node' ? obj.metadata!.name! : `${obj.metadata!.namespace}/${obj.metadata!.name}`;
    store.set(kind, key, r.value);
  }
  decoded.length = 0; // the informer keeps no copy once converted (kind-informer.ts)
  step('object store (converted model objects), minus the decoded list');

  const compiler = new Compiler();
  const snapshot = store.snapshot();
  const result = compiler.compile(snapshot, settings);
  step('compiler state + desired state (selector memberships, label indexes, chains, sets)');

  const texts = [renderIpsetRestore(result.desired.v4.ipsets), renderFullRestore(result.desired.v4)];
  step('restore texts of one sync (IPv4)');

  const observed = expectedObserved(result.desired.v4);
  step('kernel tracker (the programmed state, parsed)');

  // Keep everything alive until the figures are taken.
  const rssMiB = process.memoryUsage().rss / 1024 / 1024;
  void [store, compiler, result, texts, observed];
  return { rows, pods, policies, rssMiB };
}

const isEntry = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry) {
  const { tier, seed } = parseBenchFlags(process.argv.slice(2), { runs: 1 }, []);
  const { rows, pods, policies, rssMiB } = memoryRows(tier, seed);
  const total = rows.reduce((n, r) => n + r.bytes, 0);
  console.log(`## where the daemon's bytes are: tier ${tier} (${pods} pods, ${policies} policies), seed ${seed}`);
  console.log('');
  console.log(
    `Command: node --expose-gc --import ./scripts/register-ts.mjs scripts/bench-memory.ts ${process.argv.slice(2).join(' ')}`.trim(),
  );
  console.log('');
  console.log('| structure | heap | per pod |');
  console.log('|---|---:|---:|');
  for (const r of rows) console.log(`| ${r.what} | ${mib(r.bytes)} | ${r.perPod.toFixed(0)} B |`);
  console.log(`| **total kept** | **${mib(total)}** | **${(total / pods).toFixed(0)} B** |`);
  console.log('');
  console.log(`This process's RSS at the end: ${rssMiB.toFixed(0)} MiB (includes the generator's garbage not yet returned to the OS).`);
}
