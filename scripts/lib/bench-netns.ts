// Scratch network namespaces for the benchmarks, named `nft-bk-<6 hex>` so parallel runs never collide.
// Each one is recorded in the sandbox's exit/signal registry before it exists, so it is deleted even
// when the benchmark throws, is interrupted, or exits early. The root namespace is never touched.

import { randomBytes } from 'node:crypto';
import { run } from '../../src/dataplane/exec.js';
import { guard, removeSync, type OwnedResources } from '../../sandbox/registry.js';

export interface ScratchNetns {
  readonly name: string;
  destroy(): Promise<void>;
}

const owned: OwnedResources = { pids: new Set(), netns: [] };
let unguard: (() => void) | undefined;

export async function createScratchNetns(tag = 'bk'): Promise<ScratchNetns> {
  const name = `nft-${tag}-${randomBytes(3).toString('hex')}`;
  owned.netns.push(name);
  unguard ??= guard(owned);
  await run('ip', ['netns', 'add', name]);
  await run('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
  return { name, destroy: () => destroyScratchNetns(name) };
}

async function destroyScratchNetns(name: string): Promise<void> {
  const i = owned.netns.indexOf(name);
  if (i < 0) return;
  await run('ip', ['netns', 'del', name]).catch(() => undefined);
  owned.netns.splice(i, 1);
}

/** Deletes every scratch namespace still alive (call in `finally`). */
export function destroyAllScratchNetns(): void {
  removeSync(owned);
  unguard?.();
  unguard = undefined;
}
