// What reading the legacy listing beside the save costs the drift check (render/legacy-listing.ts: the
// listing shows the `! -i +` that iptables-legacy-save hides). A tier's compiled state is programmed into a
// scratch netns on iptables-legacy, then, interleaved run by run:
//   save      `iptables-legacy-save -t filter` alone (what a legacy drift read was);
//   listing   `iptables-legacy -t filter -L -v -n -x` alone;
//   both      the runner's save: both tools at once, then the merge (what a legacy drift read is now);
//   merge     revealHiddenInterfaces on the texts already read (CPU in the daemon);
//   rewrite   the alternative not taken: every chain of ours flushed and written again in one
//             `iptables-legacy-restore --noflush` (no comparison; hooks left out, they cannot be rewritten so).
// Wall times are medians; CPU (this process and the tools) is the mean per run.
//
// Usage (root): node --import ./scripts/register-ts.mjs scripts/bench-legacy-listing.ts [--tier large] [--runs 7] [--seed 1]

import { compile } from '../src/compile/index.js';
import { run } from '../src/dataplane/exec.js';
import { createIptablesRunner } from '../src/dataplane/iptables.js';
import { openKernel } from '../src/dataplane/kernel.js';
import { Syncer } from '../src/reconcile/syncer.js';
import { renderFullRestore, revealHiddenInterfaces } from '../src/render/index.js';
import { generateCluster } from './bench-lib/generator.js';
import { parseBenchFlags, runAsScript } from './lib/bench-args.js';
import { silentLogger } from './lib/bench-kernel-port.js';
import { createScratchNetns, destroyAllScratchNetns } from './lib/bench-netns.js';
import { fmtInt, fmtMs, sample, summarize, type Sample } from './lib/bench-stats.js';

async function main(): Promise<void> {
  const { tier, seed, runs } = parseBenchFlags(process.argv.slice(2), { runs: 7 }, []);
  const { snapshot, settings, stats } = generateCluster({ tier, seed, node: 'node-1' });
  const desired = compile(snapshot, settings).desired;
  const ns = await createScratchNetns('ll');
  try {
    const kernel = await openKernel({ netns: ns.name, backend: 'legacy', ipv6: false });
    await new Syncer(kernel, { chainPrefix: settings.chainPrefix, ipsetPrefix: settings.ipsetPrefix }, silentLogger).sync(desired);
    const runner = createIptablesRunner({ family: 4, backend: 'legacy', netns: ns.name });
    const save = async () => (await run('iptables-legacy-save', ['-t', 'filter'], { netns: ns.name })).stdout;
    const listing = async () => (await run('iptables-legacy', ['-w', '-t', 'filter', '-L', '-v', '-n', '-x'], { netns: ns.name })).stdout;
    const [saved, listed] = [await save(), await listing()];
    const rules = saved.split('\n').filter((l) => l.startsWith('-A ')).length;
    const chains = renderFullRestore({ ...desired.v4, hooks: [] });
    const rewrite = () => run('iptables-legacy-restore', ['--noflush', '--wait'], { netns: ns.name, input: chains });
    const samples: Record<'save' | 'listing' | 'both' | 'merge' | 'rewrite', Sample[]> = {
      save: [],
      listing: [],
      both: [],
      merge: [],
      rewrite: [],
    };
    for (let i = 0; i < runs; i++) {
      samples.save.push(await sample(save));
      samples.listing.push(await sample(listing));
      samples.both.push(await sample(() => runner.save('filter')));
      samples.merge.push(await sample(async () => revealHiddenInterfaces(saved, listed)));
      samples.rewrite.push(await sample(rewrite));
    }
    console.log(
      `tier ${tier} (seed ${seed}): ${fmtInt(stats.pods)} pods, ${fmtInt(rules)} filter rules, save ${fmtInt(saved.length)} B, listing ${fmtInt(listed.length)} B; ${runs} runs`,
    );
    console.log('| read | wall ms (median) | CPU ms (mean: daemon + tools) |');
    console.log('| --- | --- | --- |');
    for (const [name, s] of Object.entries(samples)) {
      const sum = summarize(s);
      console.log(`| ${name} | ${fmtMs(sum.wallMs)} | ${fmtMs(sum.cpuMs)} (${fmtMs(sum.selfCpuMs)} + ${fmtMs(sum.childCpuMs)}) |`);
    }
  } finally {
    await ns.destroy();
    destroyAllScratchNetns();
  }
}

await runAsScript(import.meta.url, 'programs iptables-legacy in a scratch network namespace', main);
