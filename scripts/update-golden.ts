// Regenerates rules/<case>/expected.* from the compiler. Review the resulting diff like code.
// Usage: npm run golden [-- case-name…]

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXPECTED6_FILES, EXPECTED_FILES, goldenCaseNames, loadGoldenCase } from '../test/helpers/golden.js';

const wanted = process.argv.slice(2);
for (const name of wanted.length ? wanted : goldenCaseNames()) {
  const c = loadGoldenCase(name);
  writeFileSync(join(c.dir, EXPECTED_FILES.ipsets), c.ipsets);
  writeFileSync(join(c.dir, EXPECTED_FILES.rules), c.rules);
  writeFileSync(join(c.dir, EXPECTED_FILES.problems), c.problems);
  // A dual-stack case (node-1 has an IPv6 pod CIDR) also gets the IPv6 payload.
  if (c.v6) {
    writeFileSync(join(c.dir, EXPECTED6_FILES.ipsets), c.v6.ipsets);
    writeFileSync(join(c.dir, EXPECTED6_FILES.rules), c.v6.rules);
  }
  const v6 = c.v6 ? `; IPv6: ${c.result.desired.v6.chains.length} chains, ${c.result.desired.v6.ipsets.length} sets` : '';
  console.log(
    `rules/${name}: ${c.result.desired.v4.chains.length} chains, ${c.result.desired.v4.ipsets.length} sets, ${c.problems.split('\n').filter(Boolean).length} problems${v6}`,
  );
}
