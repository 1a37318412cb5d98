// `cleanup`'s work: every chain, hook and set netfence owns removed (the syncer converging on nothing), then
// the anti-spoofing bridge table (nft), whose absence is not an error. Nothing else is touched.

import type { Logger } from '../log.js';
import { emptyFamilyState, type DesiredState } from '../model/index.js';
import { summarize, type DiffSummary } from '../plan/diff.js';
import { kernelSyncer, type KernelReadRequest } from './kernel-read.js';

export interface Cleaned {
  readonly summary: DiffSummary;
  /** Whether the anti-spoofing table was there (and so removed). */
  readonly antiSpoofTable: boolean;
}

export async function cleanupNode(request: KernelReadRequest, netns: string | undefined, logger: Logger): Promise<Cleaned> {
  const nothing: DesiredState = { v4: emptyFamilyState(4), v6: emptyFamilyState(6) };
  const syncer = await kernelSyncer(request, logger);
  const sync = await syncer.sync(nothing, { readKernel: true });
  // Loaded here: only cleanup needs them.
  const [{ removeAntiSpoofTable }, { applyNftScript, listNftTableJson }] = await Promise.all([
    import('../antispoof/remove.js'),
    import('../dataplane/nft.js'),
  ]);
  const antiSpoofTable = await removeAntiSpoofTable({
    list: (family, name) => listNftTableJson(family, name, netns),
    apply: (script) => applyNftScript(script, netns),
  });
  return { summary: summarize(sync.plans), antiSpoofTable };
}
