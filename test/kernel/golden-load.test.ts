// Every golden payload loads into a real kernel: `ipset restore` of expected.ipsets, then
// `iptables-restore --test` and a real `--noflush` restore of expected.rules, on both backends,
// and `iptables-save` reads our chains back line for line as rendered. A dual-stack case's IPv6 payload
// (expected6.*) goes the same way through `ipset restore` and `ip6tables-restore`, beside the IPv4 one.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { goldenCaseNames, EXPECTED6_FILES, EXPECTED_FILES, RULES_DIR } from '../helpers/golden.js';
import { createNetns, describeKernel, destroyAll } from '../helpers/netns.js';

const cases = goldenCaseNames();
afterAll(destroyAll);

describeKernel('golden payloads load into the kernel', () => {
  describe.each(['nft', 'legacy'] as const)('%s backend', (backend) => {
    it.each(cases)('%s', async (name) => {
      const ipsets = readFileSync(join(RULES_DIR, name, EXPECTED_FILES.ipsets), 'utf8');
      const rules = readFileSync(join(RULES_DIR, name, EXPECTED_FILES.rules), 'utf8');
      const ns = await createNetns();
      try {
        if (ipsets) await ns.exec('ipset', ['restore'], ipsets);
        await ns.exec(`iptables-${backend}-restore`, ['--noflush', '--test'], rules);
        await ns.exec(`iptables-${backend}-restore`, ['--noflush'], rules);
        const saved = (await ns.exec(`iptables-${backend}-save`, ['-t', 'filter'])).stdout;
        const ours = (text: string) =>
          text
            .split('\n')
            .filter((l) => /^-A nf-/.test(l))
            .sort();
        expect(ours(saved)).toEqual(ours(rules));
        expect(saved).toMatch(/^-A FORWARD -m comment --comment "nf:\S+ netfence policy" -j nf-FORWARD$/m);

        const rules6File = join(RULES_DIR, name, EXPECTED6_FILES.rules);
        if (!existsSync(rules6File)) return;
        const ipsets6 = readFileSync(join(RULES_DIR, name, EXPECTED6_FILES.ipsets), 'utf8');
        const rules6 = readFileSync(rules6File, 'utf8');
        if (ipsets6) await ns.exec('ipset', ['restore'], ipsets6);
        await ns.exec(`ip6tables-${backend}-restore`, ['--noflush', '--test'], rules6);
        await ns.exec(`ip6tables-${backend}-restore`, ['--noflush'], rules6);
        const saved6 = (await ns.exec(`ip6tables-${backend}-save`, ['-t', 'filter'])).stdout;
        expect(ours(saved6)).toEqual(ours(rules6));
        expect(ours(rules6).length).toBeGreaterThan(0);
        expect(saved6).toMatch(/^-A FORWARD -m comment --comment "nf:\S+ netfence policy" -j nf-FORWARD$/m);
        // Every inet6 set the payload names is in the kernel as inet6.
        const sets = (await ns.exec('ipset', ['list', '-n'])).stdout.split('\n');
        for (const m of ipsets6.matchAll(/^create (\S+) \S+ family inet6/gm)) expect(sets).toContain(m[1]);
      } finally {
        await ns.destroy();
      }
    });
  });
});
