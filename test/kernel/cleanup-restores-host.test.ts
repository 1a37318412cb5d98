// `netfence cleanup` (in-process `main`) after `netfence apply`: iptables-save of every table, both
// families, and the ipsets are exactly what they were before netfence ran — nft and legacy, on a node
// that already carries flannel/kube-proxy state and on a namespace where nothing ran before.

import { jest } from '@jest/globals';
import { join } from 'node:path';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import { goldenCaseNames, loadGoldenCase } from '../helpers/golden.js';
import { BACKENDS, installForeignState, ipset, iptablesSave, netfence, parseFilter, stable } from '../helpers/kernel-asserts.js';
import { describeKernel, withNetns } from '../helpers/netns.js';

jest.setTimeout(20_000);

async function everything(netns: string, backend: IptablesBackend) {
  return {
    v4: stable(await iptablesSave(netns, backend)),
    v6: stable(await iptablesSave(netns, backend, undefined, 6)),
    ipsetList: await ipset(netns, ['list']),
    ipsetSave: await ipset(netns, ['save']),
  };
}

const CASES = BACKENDS.flatMap((backend) => ['seed-db-policy', 'named-port-serve-80'].map((golden) => ({ backend, golden })));

describeKernel('cleanup leaves the host as it was', () => {
  it('uses golden cases that exist', () => {
    for (const { golden } of CASES) expect(goldenCaseNames()).toContain(golden);
  });

  it.each(CASES)('after apply of $golden on a node with flannel + kube-proxy state ($backend)', async ({ backend, golden }) => {
    await withNetns(async (ns) => {
      await installForeignState(ns.name, backend);
      const before = await everything(ns.name, backend);
      const flags = ['--netns', ns.name, '--backend', backend, '--log-level', 'error'];
      await netfence(['apply', ...flags, '--node-name', 'node-1', '--resources', join(loadGoldenCase(golden).dir, 'cluster.yaml')]);
      expect(await everything(ns.name, backend)).not.toEqual(before); // apply did program something

      const said = await netfence(['cleanup', ...flags]);

      expect(await everything(ns.name, backend)).toEqual(before);
      expect(said).toMatch(/cleanup: removed [1-9]\d* chain\(s\), 1 hook\(s\), [1-9]\d* set\(s\)/);
      // A second cleanup finds nothing to remove.
      expect(await netfence(['cleanup', ...flags])).toMatch(/cleanup: removed 0 chain\(s\), 0 hook\(s\), 0 set\(s\)/);
    });
  });

  // Where nothing ran before, the filter table did not exist; writing our chains creates it (both
  // backends), and cleanup removes only what is ours, never a table. What remains is the empty
  // built-in chains with their default policies: no rule, no chain, no set.
  it.each(BACKENDS)('after apply in a namespace where nothing ran before (%s): no rule, chain or set remains', async (backend) => {
    await withNetns(async (ns) => {
      const flags = ['--netns', ns.name, '--backend', backend, '--log-level', 'error'];
      await netfence([
        'apply',
        ...flags,
        '--node-name',
        'node-1',
        '--resources',
        join(loadGoldenCase('seed-db-policy').dir, 'cluster.yaml'),
      ]);

      await netfence(['cleanup', ...flags]);

      const after = await everything(ns.name, backend);
      const emptyBuiltins = (save: string) =>
        save.split('\n').filter((l) => l && !/^(\*filter|COMMIT|:(INPUT|FORWARD|OUTPUT) ACCEPT \[0:0\])$/.test(l));
      expect(emptyBuiltins(after.v4)).toEqual([]);
      expect(parseFilter(after.v4).declared).toEqual(new Set(['INPUT', 'FORWARD', 'OUTPUT']));
      // Legacy instantiates the IPv6 filter table on the first ip6tables-save; nft shows nothing.
      expect(emptyBuiltins(after.v6)).toEqual([]);
      expect(after.ipsetSave).toBe('');
    });
  });
});
