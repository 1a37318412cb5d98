// Last-resort cleanup of live sandboxes when the process exits or is interrupted.
// Signals and `exit` are process-wide, so this registry is too: every sandbox records what it
// created here the moment it creates it, and `destroy()` unregisters after removing it all.
// Exit and signal handlers can only run synchronous code, hence `runSyncBestEffort`.

import { killPid, runSyncBestEffort } from '../src/dataplane/process.js';

/** What one sandbox owns right now; the sandbox mutates these sets as it creates and removes things. */
export interface OwnedResources {
  readonly pids: Set<number>;
  /** Network namespaces, in creation order: removed in reverse, pods before nodes before the underlay. */
  readonly netns: string[];
}

const live = new Set<OwnedResources>();
const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Kills the processes and deletes the namespaces synchronously. Deleting a namespace deletes its links. */
export function removeSync(owned: OwnedResources): void {
  for (const pid of owned.pids) killPid(pid, 'SIGKILL');
  owned.pids.clear();
  if (owned.netns.length > 0) {
    // One `ip` process for all of them; -force keeps going past ones that are already gone.
    runSyncBestEffort(
      'ip',
      ['-force', '-batch', '-'],
      [...owned.netns]
        .reverse()
        .map((n) => `netns del ${n}\n`)
        .join(''),
    );
  }
  owned.netns.length = 0;
}

function removeAllSync(): void {
  for (const owned of live) removeSync(owned);
  live.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  removeAllSync();
  uninstall();
  // Re-raise so the process still dies of the signal, unless someone else handles it.
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

const signalHandlers = new Map<NodeJS.Signals, () => void>(SIGNALS.map((s) => [s, () => onSignal(s)]));
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', removeAllSync);
  for (const [signal, handler] of signalHandlers) process.on(signal, handler);
}

function uninstall(): void {
  if (!installed) return;
  installed = false;
  process.off('exit', removeAllSync);
  for (const [signal, handler] of signalHandlers) process.off(signal, handler);
}

/** Starts guarding `owned`; returns the function that stops guarding it (call it after a clean destroy). */
export function guard(owned: OwnedResources): () => void {
  live.add(owned);
  install();
  return () => {
    live.delete(owned);
    if (live.size === 0) uninstall();
  };
}
