// Every golden payload loads into a real kernel: `ipset restore` of expected.ipsets, then
// `iptables-restore --test` and a real `--noflush` restore of expected.rules, on both backends,
// and `iptables-save` reads our chains back line for line as rendered.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { goldenCaseNames, EXPECTED_FILES, RULES_DIR } from '../helpers/golden.js';
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
        const ours = (text: string) => text.split('\n').filter((l) => /^-A nf-/.test(l)).sort();
        expect(ours(saved)).toEqual(ours(rules));
        expect(saved).toMatch(/^-A FORWARD -m comment --comment "nf:\S+ netfence policy" -j nf-FORWARD$/m);
      } finally {
        await ns.destroy();
      }
    });
  });
});
