// Who may hold a connection to the metrics port, over connections that come and go for days: each close
// gives back the very slot its connection took. After any number of fills and releases the same peers get
// the same answers: no peer (Prometheus in a pod) is locked out for good, and the slots kept for the
// kubelet's loopback probes never shrink however often the probes come and go.

import { ConnectionAdmission, type AdmissionLimits } from '../../../src/observe/connection-admission.js';

// Non-reserved peers together hold at most 6 − 2 = 4.
const LIMITS: AdmissionLimits = { maxConnections: 6, maxPerPeer: 3, reservedForLoopback: 2 };
const POD_A = '10.244.1.10';
const POD_B = '10.244.2.20';
const KUBELET = '127.0.0.1';

/** Tries `n` connections from `peer`: the answer to each (`ok` or why not), and the ones admitted. */
function connect(admission: ConnectionAdmission, peer: string, n: number, held: string[]): string[] {
  return Array.from({ length: n }, () => {
    const why = admission.admit(peer);
    if (why === undefined) held.push(peer);
    return why ?? 'ok';
  });
}

/** A pod floods, a second pod comes, the kubelet probes: what each is told. */
function fill(admission: ConnectionAdmission, held: string[]): Record<string, string[]> {
  return {
    podA: connect(admission, POD_A, 4, held),
    podB: connect(admission, POD_B, 2, held),
    kubelet: connect(admission, KUBELET, 3, held),
  };
}

const FULL = {
  podA: ['ok', 'ok', 'ok', 'per-peer'],
  podB: ['ok', 'total'],
  kubelet: ['ok', 'ok', 'total'],
};

describe('connection admission over fills and releases', () => {
  it('every peer gets the same answers after all its connections closed, round after round', () => {
    const admission = new ConnectionAdmission(LIMITS);
    for (let round = 0; round < 4; round++) {
      const held: string[] = [];
      expect({ round, answers: fill(admission, held) }).toEqual({ round, answers: FULL });
      for (const peer of held) admission.release(peer);
    }
  });

  it('a peer whose connections closed while others stay gets its share back', () => {
    const admission = new ConnectionAdmission(LIMITS);
    const held: string[] = [];
    fill(admission, held);
    // Pod A leaves; pod B, still holding one, may now take what the non-reserved peers' cap leaves (3 more).
    for (const peer of held.filter((p) => p === POD_A)) admission.release(peer);
    expect(connect(admission, POD_B, 4, [])).toEqual(['ok', 'ok', 'per-peer', 'per-peer']);
    expect(connect(admission, POD_A, 2, [])).toEqual(['ok', 'total']);
  });

  it('kubelet probes coming and going never let other peers into the reserved slots', () => {
    const admission = new ConnectionAdmission(LIMITS);
    // A day of probes: each opens a connection and closes it.
    for (let i = 0; i < 50; i++) {
      expect(admission.admit(KUBELET)).toBeUndefined();
      admission.release(KUBELET);
    }
    expect(fill(admission, [])).toEqual(FULL);
  });
});
