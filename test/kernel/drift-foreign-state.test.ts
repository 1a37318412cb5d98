// Foreign state on a node — flanneld's and kube-proxy's chains in filter and nat, IPv6 rules, foreign
// ipsets, and names that merely look like ours — is byte-for-byte what it was after `netfence apply`,
// after a drift repair, and after `netfence cleanup`; after cleanup nothing of ours is left either.

import { jest } from '@jest/globals';
import { join } from 'node:path';
import { openKernel } from '../../src/dataplane/kernel.js';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import { loadGoldenCase } from '../helpers/golden.js';
import {
  BACKENDS,
  OWN,
  ReconcilerHarness,
  expectedFromRestore,
  foreignOnly,
  ipset,
  iptables,
  installForeignState,
  iptablesSave,
  netfence,
  ourChains,
  parseFilter,
  recordingKernel,
  stable,
} from '../helpers/kernel-asserts.js';
import { describeKernel, withNetns } from '../helpers/netns.js';

jest.setTimeout(20_000);

const golden = loadGoldenCase('seed-db-policy');

/** All tables of both families and every ipset, as saved (minus `#` lines and counters). */
async function everything(netns: string, backend: IptablesBackend) {
  return {
    v4: stable(await iptablesSave(netns, backend)),
    v6: stable(await iptablesSave(netns, backend, undefined, 6)),
    ipsets: await ipset(netns, ['save']),
  };
}

/** Everything that is not ours: all tables of both families, and the foreign ipsets. */
async function foreignState(netns: string, backend: IptablesBackend) {
  const ownSet = new RegExp(`^(create|add) ${OWN.ipsetPrefix}[46][a-z]:`);
  return {
    v4: foreignOnly(await iptablesSave(netns, backend)),
    v6: foreignOnly(await iptablesSave(netns, backend, undefined, 6)),
    ipsets: (await ipset(netns, ['save']))
      .split('\n')
      .filter((l) => l && !ownSet.test(l))
      .join('\n'),
  };
}

describeKernel('foreign state is left byte-for-byte alone', () => {
  it.each(BACKENDS)('flannel + kube-proxy rules through apply, drift repair and cleanup (%s)', async (backend) => {
    await withNetns(async (ns) => {
      await installForeignState(ns.name, backend);
      const before = await foreignState(ns.name, backend);
      const untouched = await everything(ns.name, backend);
      expect(before.v4).toContain('-A FLANNEL-FWD'); // the fixture really is there
      expect(before.ipsets).toContain('KUBE-CLUSTER-IP');
      const common = ['--netns', ns.name, '--backend', backend, '--log-level', 'error'];

      // apply
      await netfence(['apply', ...common, '--node-name', 'node-1', '--resources', join(golden.dir, 'cluster.yaml')]);
      const filter = parseFilter(await iptablesSave(ns.name, backend, 'filter'));
      expect(ourChains(filter).size).toBeGreaterThan(0);
      expect(filter.rules.get('FORWARD')?.[0]).toBe(expectedFromRestore(golden.rules).hooks.get('FORWARD')?.[0]);
      expect(await foreignState(ns.name, backend)).toEqual(before);

      // drift repair: our hook and one of our chains damaged, repaired by one periodic run
      const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
      const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings });
      try {
        expect(await harness.start()).toMatchObject({ kind: 'synced', drift: false });
        await iptables(ns.name, backend, ['-D', 'FORWARD', '1']);
        await iptables(ns.name, backend, ['-F', golden.result.desired.v4.chains.find((c) => c.role.kind === 'policy')!.name]);
        expect(await harness.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: true });
      } finally {
        harness.stop();
      }
      expect(await foreignState(ns.name, backend)).toEqual(before);

      // cleanup: nothing of ours is left, and everything is exactly as before netfence ran
      await netfence(['cleanup', ...common]);
      expect(await everything(ns.name, backend)).toEqual(untouched);
    });
  });
});
