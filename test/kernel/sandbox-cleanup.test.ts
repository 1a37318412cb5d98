// A sandbox never outlives its owner: creation failing half-way, signals, exit and uncaught
// exceptions all remove every namespace and agent (the registry's synchronous path).

import { jest } from '@jest/globals';
import { findLeftovers, removeLeftovers } from '../../sandbox/leftovers.js';
import { killPid, startJsonLineProcess } from '../../src/dataplane/process.js';
import { createSandbox } from '../../sandbox/topology.js';

const NODES = [
  { name: 'n1', podCidr: '10.244.1.0/24' },
  { name: 'n2', podCidr: '10.244.2.0/24' },
];
const NONE = { netns: [], pids: [] };

jest.setTimeout(30_000);

describe('sandbox creation failing half-way', () => {
  it('a sandbox whose creation fails half-way removes what it created', async () => {
    const id = Math.random().toString(16).slice(2, 6);
    // The node agents cannot bind port 80 twice, so creation fails after every namespace exists.
    await expect(createSandbox({ id, nodes: NODES }, { ports: [80, 80] })).rejects.toThrow();
    expect(await findLeftovers(`nfs${id}-`)).toEqual(NONE);
  });
});

describe('sandbox cleanup when the owning process dies', () => {
  /** A child node process that builds a one-pod sandbox, reports its prefix, then idles (or exits). */
  const childScript = (id: string, then: 'idle' | 'exit' | 'throw'): string => `
    import { createSandbox } from ${JSON.stringify(new URL('../../sandbox/topology.js', import.meta.url).pathname)};
    const sb = await createSandbox({ id: ${JSON.stringify(id)}, nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }] });
    await sb.addPod({ namespace: 'x', name: 'a', node: 'n1' });
    console.log(JSON.stringify({ ready: true, prefix: sb.prefix }));
    ${then === 'exit' ? 'process.exit(0);' : then === 'throw' ? "setTimeout(() => { throw new Error('boom'); }, 50);" : 'setInterval(() => {}, 1000);'}
  `;
  const registerTs = new URL('../../scripts/register-ts.mjs', import.meta.url).pathname;

  const startChild = (id: string, then: 'idle' | 'exit' | 'throw') =>
    startJsonLineProcess({
      file: process.execPath,
      args: ['--import', registerTs, '--input-type=module', '-e', childScript(id, then)],
      readyTimeoutMs: 15_000,
    });

  it.each([
    { name: 'SIGINT', then: 'idle', signal: 'SIGINT' },
    { name: 'SIGTERM', then: 'idle', signal: 'SIGTERM' },
    { name: 'process.exit()', then: 'exit' },
    { name: 'an uncaught exception', then: 'throw' },
  ] as const)('$name removes every namespace and agent', async ({ then, ...c }) => {
    const id = `c${Math.random().toString(16).slice(2, 5)}`;
    const child = await startChild(id, then);
    expect(child.hello['prefix']).toBe(`nfs${id}-`);
    if ('signal' in c) killPid(child.pid, c.signal);
    await child.exited;
    expect(await findLeftovers(`nfs${id}-`)).toEqual(NONE);
  });

  it('SIGKILL leaves namespaces (nothing can run), agents exit on their own, removeLeftovers() clears the rest', async () => {
    const id = `k${Math.random().toString(16).slice(2, 5)}`;
    const child = await startChild(id, 'idle');
    killPid(child.pid, 'SIGKILL');
    await child.exited;
    // Agents notice their closed stdin and exit; give them a moment.
    for (let i = 0; i < 50 && (await findLeftovers(`nfs${id}-`)).pids.length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    const left = await findLeftovers(`nfs${id}-`);
    expect(left.pids).toEqual([]);
    expect(left.netns).toHaveLength(3);
    await removeLeftovers(`nfs${id}-`);
    expect(await findLeftovers(`nfs${id}-`)).toEqual(NONE);
  });
});
