// Picks the iptables backend (nft or legacy) the node already uses, so our rules land in the same
// netfilter tables as kube-proxy's and flannel's. Mixing backends "works" but splits the ruleset in
// two places that both run, in an order nobody chose.
//
// The heuristic is the one kube-proxy images use (kubernetes-sigs/iptables-wrappers):
//  1. kubelet (≥ 1.17) leaves a marker chain, :KUBE-IPTABLES-HINT or :KUBE-KUBELET-CANARY (in mangle);
//     whichever backend holds it is the one kubelet, and so kube-proxy, writes to. nft is checked first.
//  2. Otherwise, the backend with more rules ("-A …" lines) across iptables and ip6tables wins;
//  3. a tie, including both empty, means nft: the default of every current distribution.

import { countRules, hasKubeletHint } from '../render/index.js';
import { run } from './exec.js';
import { iptablesTool, type IptablesBackend } from './iptables.js';

/** The concatenated `iptables-save` + `ip6tables-save` output of each backend ('' when a tool failed). */
export interface BackendEvidence {
  readonly nft: string;
  readonly legacy: string;
}

export interface BackendDecision {
  readonly backend: IptablesBackend;
  /** One line for the log: why this backend. */
  readonly reason: string;
}

export function decideBackend(evidence: BackendEvidence, override?: IptablesBackend): BackendDecision {
  if (override !== undefined) return { backend: override, reason: `configured: ${override}` };
  if (hasKubeletHint(evidence.nft)) return { backend: 'nft', reason: 'kubelet hint chain found in iptables-nft' };
  if (hasKubeletHint(evidence.legacy)) return { backend: 'legacy', reason: 'kubelet hint chain found in iptables-legacy' };
  const nft = countRules(evidence.nft);
  const legacy = countRules(evidence.legacy);
  if (legacy > nft) return { backend: 'legacy', reason: `legacy has more rules (${legacy} > ${nft})` };
  if (nft > legacy) return { backend: 'nft', reason: `nft has more rules (${nft} > ${legacy})` };
  return { backend: 'nft', reason: `no preference (${nft} rules each): default nft` };
}

export interface DetectBackendOptions {
  readonly netns?: string | undefined;
  readonly override?: IptablesBackend | undefined;
}

/** Reads both backends' rules in the target netns (best effort: a failing tool counts as empty) and decides. */
export async function detectBackend(opts: DetectBackendOptions = {}): Promise<BackendDecision> {
  if (opts.override !== undefined) return decideBackend({ nft: '', legacy: '' }, opts.override);
  return (await detectBackendWithSaves(opts)).decision;
}

/** The decision, and the chosen backend's whole-ruleset save of each family (undefined where the tool failed). */
export interface DetectedWithSaves {
  readonly decision: BackendDecision;
  readonly saves: { readonly 4: string | undefined; readonly 6: string | undefined };
}

/**
 * detectBackend for a one-shot command that reads the kernel next: the same dumps (with counters when
 * asked; `countRules` reads both forms) are kept, so the chosen backend's filter table is read from them
 * (filterTableOf) instead of by another round of tools. With a configured backend only its two are run.
 */
export async function detectBackendWithSaves(opts: DetectBackendOptions & { readonly counters?: boolean }): Promise<DetectedWithSaves> {
  const args = opts.counters === true ? ['-c'] : [];
  const read = (backend: IptablesBackend) =>
    Promise.all(
      ([4, 6] as const).map((family) =>
        // Whole-ruleset saves, never `-t mangle`: asking legacy for a table creates it in the kernel
        // (module autoload), and detection must not change what it observes.
        run(iptablesTool(family, backend, 'save'), args, { netns: opts.netns }).then(
          (r) => r.stdout,
          () => undefined,
        ),
      ),
    );
  if (opts.override !== undefined) {
    const [v4, v6] = await read(opts.override);
    return { decision: decideBackend({ nft: '', legacy: '' }, opts.override), saves: { 4: v4, 6: v6 } };
  }
  const [nft, legacy] = await Promise.all([read('nft'), read('legacy')]);
  const text = (saves: readonly (string | undefined)[]) => saves.map((t) => t ?? '').join('\n');
  const decision = decideBackend({ nft: text(nft), legacy: text(legacy) });
  const [v4, v6] = decision.backend === 'nft' ? nft : legacy;
  return { decision, saves: { 4: v4, 6: v6 } };
}
