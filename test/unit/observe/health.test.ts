import { HealthState } from '../../../src/observe/health.js';

function fixture() {
  let now = 1_000;
  const readyChanges: boolean[] = [];
  const state = new HealthState({ now: () => now, stallAfterMs: 90_000, onReadyChange: (ready) => readyChanges.push(ready) });
  return { state, readyChanges, advance: (ms: number) => (now += ms) };
}

type Step = (f: ReturnType<typeof fixture>) => void;
const bridgeOn: Step = (f) => f.state.bridgeNfCallIptables(true);
const bridgeOff: Step = (f) => f.state.bridgeNfCallIptables(false);
const bridge6 =
  (on: boolean | undefined): Step =>
  (f) =>
    f.state.bridgeNfCallIp6tables(on);
const programmed: Step = (f) => f.state.fullSyncProgrammed();
const wait =
  (ms: number): Step =>
  (f) =>
    f.advance(ms);
const beat: Step = (f) => f.state.heartbeat();
const ipvs =
  (reason: string | undefined): Step =>
  (f) =>
    f.state.ipvsDetected(reason);
const crash: Step = (f) => f.state.loopStopped('TypeError: boom');
const unconfirmed =
  (reason: string | undefined): Step =>
  (f) =>
    f.state.apiUnconfirmed(reason);

describe('HealthState', () => {
  it.each<{ name: string; steps: Step[]; live: string | true; ready: string | true }>([
    { name: 'fresh start', steps: [], live: true, ready: 'net.bridge.bridge-nf-call-iptables not checked yet' },
    { name: 'bridge on, nothing programmed', steps: [bridgeOn], live: true, ready: 'first full sync not programmed yet' },
    {
      name: 'programmed but bridge-nf off',
      steps: [programmed, bridgeOff],
      live: true,
      ready: 'net.bridge.bridge-nf-call-iptables is 0: bridged pod-to-pod traffic would bypass iptables',
    },
    { name: 'programmed and bridge on', steps: [bridgeOn, programmed], live: true, ready: true },
    {
      name: 'IPv6 pods and bridge-nf-call-ip6tables off',
      steps: [bridgeOn, programmed, bridge6(false)],
      live: true,
      ready: 'net.bridge.bridge-nf-call-ip6tables is 0: bridged IPv6 pod-to-pod traffic would bypass ip6tables',
    },
    {
      name: 'IPv6 pods and bridge-nf-call-ip6tables on again',
      steps: [bridgeOn, programmed, bridge6(false), bridge6(true)],
      live: true,
      ready: true,
    },
    {
      name: 'the IPv6 sysctl no longer applies (no IPv6 pods)',
      steps: [bridgeOn, programmed, bridge6(false), bridge6(undefined)],
      live: true,
      ready: true,
    },
    {
      name: 'beats keep it alive past the window',
      steps: [bridgeOn, programmed, wait(80_000), beat, wait(80_000)],
      live: true,
      ready: true,
    },
    {
      name: 'a silent loop is dead and not ready',
      steps: [bridgeOn, programmed, wait(90_001)],
      live: 'sync loop silent for 90001 ms (limit 90000 ms)',
      ready: 'sync loop silent for 90001 ms (limit 90000 ms)',
    },
    {
      name: 'a stopped loop fails at once',
      steps: [bridgeOn, programmed, crash],
      live: 'sync loop stopped: TypeError: boom',
      ready: 'sync loop stopped: TypeError: boom',
    },
    { name: 'a restarted loop recovers', steps: [bridgeOn, programmed, crash, beat], live: true, ready: true },
    {
      name: 'kube-proxy in IPVS mode: programmed but not ready',
      steps: [bridgeOn, programmed, ipvs('IPVS mode found')],
      live: true,
      ready: 'IPVS mode found',
    },
    { name: 'IPVS gone again', steps: [bridgeOn, programmed, ipvs('IPVS mode found'), ipvs(undefined)], live: true, ready: true },
    {
      name: 'an API answered 404 and is not yet confirmed gone: programmed but not ready',
      steps: [bridgeOn, programmed, unconfirmed('the ClusterNetworkPolicy API answered 404')],
      live: true,
      ready: 'the ClusterNetworkPolicy API answered 404',
    },
    {
      name: 'the API settled (served again or confirmed gone)',
      steps: [bridgeOn, programmed, unconfirmed('the ClusterNetworkPolicy API answered 404'), unconfirmed(undefined)],
      live: true,
      ready: true,
    },
  ])('$name', ({ steps, live, ready }) => {
    const f = fixture();
    for (const step of steps) step(f);
    expect(f.state.liveness()).toEqual(live === true ? { ok: true } : { ok: false, reason: live });
    expect(f.state.readiness()).toEqual(ready === true ? { ok: true } : { ok: false, reason: ready });
  });

  it('reports readiness flips once each', () => {
    const f = fixture();
    for (const step of [bridgeOn, programmed, beat, bridgeOff, bridgeOn]) step(f);
    expect(f.readyChanges).toEqual([true, false, true]);
  });

  it('reports a stall when it is next asked', () => {
    const f = fixture();
    for (const step of [bridgeOn, programmed, wait(100_000)]) step(f);
    f.state.readiness();
    expect(f.readyChanges).toEqual([true, false]);
  });
});

describe('HealthState: a source that cannot be read completely', () => {
  it('before the first sync it says why nothing is programmed; after it, ready with a degraded detail until it reads again', () => {
    const f = fixture();
    bridgeOn(f);
    f.state.sourceIncomplete('cannot read 1 manifest path(s)/file(s) completely: /rules');
    expect(f.state.readiness()).toEqual({
      ok: false,
      reason:
        'first full sync not programmed yet (waiting for a complete read of the manifests: cannot read 1 manifest path(s)/file(s) completely: /rules)',
    });
    f.state.sourceIncomplete(undefined);
    programmed(f);
    f.state.sourceIncomplete('cannot read 1 manifest path(s)/file(s) completely: /rules');
    expect(f.state.readiness()).toEqual({ ok: true, detail: 'degraded: cannot read 1 manifest path(s)/file(s) completely: /rules' });
    f.state.sourceIncomplete(undefined);
    expect(f.state.readiness()).toEqual({ ok: true });
    expect(f.readyChanges).toEqual([true]);
  });
});
