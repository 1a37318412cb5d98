// Faults around the kernel tools, with the real tools in a network namespace: an iptables-restore or
// ipset that hangs, and the xtables lock held by someone else for a long time. Each command is killed
// after its timeout, the sync fails with the previous rules still enforcing, and the reconciler's retry
// converges once the fault is gone: the loop is never stuck.
//
// The hang is a PATH shim (a wrapper that sleeps while a marker file exists, else runs the real tool);
// `ip netns exec` finds tools through PATH, so only this test's commands see it. The lock is a private
// lock file (XTABLES_LOCKFILE, honoured by iptables-legacy) held with flock(1): /run/xtables.lock is
// host-wide and must never be held by a test.

import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openKernel } from '../../src/dataplane/kernel.js';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import { loadGoldenCase } from '../helpers/golden.js';
import { expectedFromRestore, iptablesSave, ourChains, parseFilter, ReconcilerHarness } from '../helpers/kernel-asserts.js';
import { describeKernel, withNetns } from '../helpers/netns.js';

jest.setTimeout(60_000);

const golden = loadGoldenCase('seed-db-policy');
const TIMEOUT_MS = 1_000;
const figures: string[] = [];

afterAll(() => {
  if (figures.length > 0) console.log(`kernel faults (measured on a shared, loaded machine):\n${figures.join('\n')}`);
});

/** Runs `fn` with PATH led by a directory whose `tool` hangs while `hang` exists. */
async function withHangingTool<T>(tool: string, fn: (hang: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'nft-shim-'));
  const real = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'].map((d) => join(d, tool)).find((p) => existsSync(p));
  if (!real) throw new Error(`${tool} not found`);
  const hang = join(dir, 'hang');
  writeFileSync(join(dir, tool), `#!/bin/sh\nif [ -e '${hang}' ]; then exec sleep 3600; fi\nexec '${real}' "$@"\n`);
  chmodSync(join(dir, tool), 0o755);
  writeFileSync(hang, '');
  const path = process.env['PATH'];
  process.env['PATH'] = `${dir}:${path ?? ''}`;
  try {
    return await fn(hang);
  } finally {
    process.env['PATH'] = path;
    rmSync(dir, { recursive: true, force: true });
  }
}

async function expectProgrammed(netns: string, backend: IptablesBackend): Promise<void> {
  const filter = parseFilter(await iptablesSave(netns, backend, 'filter'));
  expect(Object.fromEntries(ourChains(filter))).toEqual(Object.fromEntries(expectedFromRestore(golden.rules).chains));
}

/** First sync under the fault: fails after about the timeout; after `mend`, the retry converges. */
async function failThenRecover(netns: string, backend: IptablesBackend, name: string, mend: () => void | Promise<void>): Promise<void> {
  const kernel = await openKernel({ netns, backend, commandTimeoutMs: TIMEOUT_MS });
  const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings });
  try {
    const started = performance.now();
    const first = await harness.start();
    const failedAfter = performance.now() - started;
    expect(first).toMatchObject({ kind: 'failed' });
    expect(String((first as { error?: unknown }).error)).toMatch(/timed out/i);
    // The loop is not stuck: a second failing attempt also returns.
    const second = await harness.next();
    expect(second).toMatchObject({ kind: 'failed' });
    await mend();
    const mendedAt = performance.now();
    let run = await harness.next();
    for (let i = 0; run.kind !== 'synced' && i < 5; i++) run = await harness.next();
    expect(run).toMatchObject({ kind: 'synced' });
    const recovered = performance.now() - mendedAt;
    await expectProgrammed(netns, backend);
    figures.push(
      `  ${name} (${backend}): sync gave up after ${Math.round(failedAfter)} ms (timeout ${TIMEOUT_MS} ms); converged ${Math.round(recovered)} ms after the fault ended (plus the retry backoff, fake clock here)`,
    );
  } finally {
    harness.stop();
  }
}

describeKernel('faults around the kernel tools', () => {
  it.each<{ tool: string; backend: IptablesBackend }>([
    { tool: 'iptables-nft-restore', backend: 'nft' },
    { tool: 'iptables-legacy-restore', backend: 'legacy' },
    { tool: 'ipset', backend: 'nft' },
  ])('a hanging $tool is killed after the timeout, and the retry converges ($backend)', async ({ tool, backend }) => {
    await withNetns((ns) => withHangingTool(tool, (hang) => failThenRecover(ns.name, backend, `hanging ${tool}`, () => rmSync(hang))));
  });

  it('the xtables lock held by someone else: restore waits, is killed after the timeout, converges once released (legacy)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nft-lock-'));
    const lock = join(dir, 'xtables.lock');
    writeFileSync(lock, '');
    const previous = process.env['XTABLES_LOCKFILE'];
    process.env['XTABLES_LOCKFILE'] = lock;
    // One process that is both the lock holder and the sleeper: killing it releases the lock, no orphan.
    const holder = spawn('sh', ['-c', `exec 9>'${lock}'; flock 9; exec sleep 3600`], { stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 200)); // flock has the lock
      expect(holder.exitCode).toBeNull();
      await withNetns((ns) =>
        failThenRecover(ns.name, 'legacy', 'xtables lock held', async () => {
          const exited = new Promise((resolve) => holder.once('exit', resolve));
          process.kill(holder.pid!, 'SIGTERM');
          await exited;
        }),
      );
    } finally {
      if (holder.exitCode === null && holder.signalCode === null) process.kill(holder.pid!, 'SIGKILL');
      if (previous === undefined) delete process.env['XTABLES_LOCKFILE'];
      else process.env['XTABLES_LOCKFILE'] = previous;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
