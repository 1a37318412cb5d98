// The jest wiring shared by the conformance files: one sandbox cluster per file (built in beforeAll,
// destroyed in afterAll even when cases fail), one named test per case, and a reset to the bare
// model after every case, so no case depends on what ran before it.

import { jest } from '@jest/globals';
import { describeKernel } from '../netns.js';
import { runCase, type ConformanceCase } from './cases.js';
import { ConformanceCluster, type ConformanceOptions } from './cluster.js';

/** A case's budget: a few applies, and a 3 s deadline per matrix when it is wrong. */
const CASE_TIMEOUT_MS = 60_000;

export function describeConformance(
  title: string,
  cases: readonly ConformanceCase[],
  extra?: (cluster: () => ConformanceCluster) => void,
  options: ConformanceOptions = {},
): void {
  const names = cases.map((c) => c.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate) throw new Error(`duplicate conformance case name "${duplicate}"`);

  describeKernel(title, () => {
    jest.setTimeout(CASE_TIMEOUT_MS);
    let cluster: ConformanceCluster | undefined;
    const get = (): ConformanceCluster => {
      if (!cluster) throw new Error('the sandbox cluster was not built');
      return cluster;
    };

    beforeAll(async () => {
      cluster = await ConformanceCluster.create(options);
      await cluster.reset();
    }, CASE_TIMEOUT_MS);
    afterAll(async () => {
      await cluster?.destroy();
    }, CASE_TIMEOUT_MS);
    afterEach(async () => {
      await cluster?.reset();
    });

    it.each(cases.map((c) => ({ name: c.name, kase: c })))('$name', async ({ kase }) => {
      const failures = await runCase(get(), kase);
      if (failures.length > 0) {
        throw new Error(
          `${kase.name}: ${failures.length} wrong matrix(es)\n\n${failures.join('\n\n')}\n\napply log:\n${get().applyLog.join('\n')}`,
        );
      }
    });

    extra?.(get);
  });
}
