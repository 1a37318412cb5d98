// Scratch network namespaces for kernel tests. Every namespace is named `<prefix>-<6 hex>` (tests
// running in parallel never collide), starts with loopback up, and is registered so that it is
// deleted even when a test forgets: on afterAll of the importing test file, on process exit, and
// on SIGINT/SIGTERM. Deleting the netns takes its iptables tables (both backends), ipsets, conntrack
// entries and links with it.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { run, type RunResult } from '../../src/dataplane/exec.js';

export interface Netns {
  readonly name: string;
  /** Runs `file args` inside the namespace (`ip netns exec`); throws DataplaneCommandError on failure. */
  exec(file: string, args: readonly string[], input?: string): Promise<RunResult>;
  /** Deletes the namespace; safe to call twice. */
  destroy(): Promise<void>;
}

const live = new Set<string>();

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

export async function createNetns(prefix = 'nft'): Promise<Netns> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await run('ip', ['netns', 'add', name]);
  register(name);
  try {
    await run('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
  } catch (err) {
    await destroyNetns(name);
    throw err;
  }
  return {
    name,
    exec: (file, args, input) => run(file, args, input !== undefined ? { netns: name, input } : { netns: name }),
    destroy: () => destroyNetns(name),
  };
}

/** Runs `fn` in a fresh namespace and deletes it afterwards, whatever `fn` did. */
export async function withNetns<T>(fn: (ns: Netns) => Promise<T>, prefix = 'nft'): Promise<T> {
  const ns = await createNetns(prefix);
  try {
    return await fn(ns);
  } finally {
    await ns.destroy();
  }
}

export async function destroyAll(): Promise<void> {
  await Promise.all([...live].map((name) => destroyNetns(name)));
}

async function destroyNetns(name: string): Promise<void> {
  if (!live.has(name)) return;
  try {
    await run('ip', ['netns', 'del', name]);
  } catch (err) {
    // Already gone (deleted by hand or by the test itself) is fine; anything else is a leak worth seeing.
    if (!/No such file or directory/.test(String((err as { stderr?: unknown }).stderr ?? ''))) throw err;
  } finally {
    unregister(name);
  }
}

/**
 * `describe` when root, else `describe.skip` with a message saying why: a skipped kernel suite must
 * be loud, or a non-root CI run would look green while proving nothing about the kernel.
 */
export function describeKernel(name: string, fn: () => void): void {
  if (isRoot()) {
    describe(name, fn);
    return;
  }
  console.warn(`SKIPPED kernel suite "${name}": needs root to create network namespaces (run as root).`);
  describe.skip(name, fn);
}

// --- leak protection -----------------------------------------------------------------------------

// Exit and signal handlers cannot await, so cleanup there must be synchronous; this is the one
// place in the tests that spawns a process without run().
function destroyAllSync(): void {
  for (const name of live) spawnSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
  live.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  destroyAllSync();
  uninstallHooks();
  // Re-raise so the process still dies of the signal, with the exit status callers expect.
  process.kill(process.pid, signal);
}

const onExit = (): void => destroyAllSync();
const onSigint = (): void => onSignal('SIGINT');
const onSigterm = (): void => onSignal('SIGTERM');
let hooksInstalled = false;

// Hooks live only while a namespace does, so many test files in one jest process do not pile up
// listeners (each file gets its own copy of this module).
function register(name: string): void {
  live.add(name);
  if (hooksInstalled) return;
  process.on('exit', onExit);
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigterm);
  hooksInstalled = true;
}

function unregister(name: string): void {
  live.delete(name);
  if (live.size === 0) uninstallHooks();
}

function uninstallHooks(): void {
  if (!hooksInstalled) return;
  process.off('exit', onExit);
  process.off('SIGINT', onSigint);
  process.off('SIGTERM', onSigterm);
  hooksInstalled = false;
}

// Under jest, clean up after the importing test file, whatever its own hooks do.
if (typeof afterAll === 'function') afterAll(destroyAll);
