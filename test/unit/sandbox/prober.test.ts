import { formatMatrix, matrixOf } from '../../../sandbox/matrix.js';
import { forEachBounded, probeMatrix, waitForMatrix, type ProbeTarget } from '../../../sandbox/prober.js';
import type { ProbeRequest, SandboxPod } from '../../../sandbox/topology.js';

const pod = (key: string, ip: string): SandboxPod => {
  const [namespace = '', name = ''] = key.split('/');
  return {
    namespace,
    name,
    key,
    node: 'n1',
    ip,
    ips: [ip],
    netns: `nfs0000-pod-${namespace}.${name}`,
    hostVeth: 'veth00000000',
    ports: [80],
  };
};
const PODS = [pod('x/a', '10.244.1.2'), pod('x/b', '10.244.1.3'), pod('y/a', '10.244.1.4')];
const KEYS = PODS.map((p) => p.key);

/** A fake network: `blocked(from, ip)` decides; every probe is recorded. */
function fakeTarget(blocked: (from: string, req: ProbeRequest) => boolean) {
  const probes: { from: string; req: ProbeRequest }[] = [];
  const target: ProbeTarget = {
    pods: () => PODS,
    addressOf: (endpoint) => PODS.find((p) => p.key === endpoint)?.ip ?? '10.99.0.1',
    probe: async (from, req) => {
      probes.push({ from, req });
      return blocked(from, req) ? { ok: false, error: 'timeout' } : { ok: true };
    },
  };
  return { target, probes };
}

describe('probeMatrix', () => {
  it('probes every ordered pair of pods, itself included, with the given protocol and port', async () => {
    const { target, probes } = fakeTarget((_, req) => req.ip === '10.244.1.3');
    const observed = await probeMatrix(target, { protocol: 'SCTP', port: 81, timeoutMs: 300 });
    expect(formatMatrix(observed)).toBe(formatMatrix(matrixOf(KEYS, KEYS, (_, to) => to !== 'x/b')));
    expect(probes).toHaveLength(9);
    expect(new Set(probes.map((p) => `${p.req.protocol}/${p.req.port}/${p.req.timeoutMs}`))).toEqual(new Set(['SCTP/81/300']));
    expect(observed.errors).toEqual({ 'x/a -> x/b': 'timeout', 'x/b -> x/b': 'timeout', 'y/a -> x/b': 'timeout' });
  });

  it('accepts explicit sources: node keys and pod references', async () => {
    const { target } = fakeTarget(() => false);
    const observed = await probeMatrix(target, {
      from: ['node:n1', { namespace: 'y', name: 'a' }],
      to: ['x/a'],
      protocol: 'TCP',
      port: 80,
    });
    expect(observed.froms).toEqual(['node:n1', 'y/a']);
    expect(observed.cells).toEqual({ 'node:n1': { 'x/a': true }, 'y/a': { 'x/a': true } });
  });
});

describe('waitForMatrix', () => {
  it('re-probes whole rounds until the observation matches', async () => {
    let round = 0;
    const { target } = fakeTarget((from, req) => {
      if (from === 'x/a' && req.ip === '10.244.1.2') round++; // one probe per round hits this cell
      return round < 3 && req.ip === '10.244.1.3';
    });
    const expected = matrixOf(KEYS, KEYS, true);
    const result = await waitForMatrix(target, expected, { protocol: 'TCP', port: 80, deadlineMs: 5000, intervalMs: 0 });
    expect(result.ok).toBe(true);
    expect(result.rounds).toBe(3);
  });

  it('returns the last observation when the deadline passes', async () => {
    const { target } = fakeTarget((_, req) => req.ip === '10.244.1.3');
    const expected = matrixOf(KEYS, KEYS, true);
    const result = await waitForMatrix(target, expected, { protocol: 'UDP', port: 80, deadlineMs: 0 });
    expect(result.ok).toBe(false);
    expect(result.rounds).toBe(1);
    expect(formatMatrix(result.observed, { expected })).toContain('incorrect 3');
  });
});

describe('forEachBounded', () => {
  it.each([1, 3, 50])('never runs more than %i at once and runs every item', async (limit) => {
    let running = 0;
    let peak = 0;
    const done: number[] = [];
    await forEachBounded([...Array(20).keys()], limit, async (i) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 1));
      running--;
      done.push(i);
    });
    expect(peak).toBe(Math.min(limit, 20));
    expect(done.sort((a, b) => a - b)).toEqual([...Array(20).keys()]);
  });
});
