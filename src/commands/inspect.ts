// `inspect`'s work: which family to show, the report of that family's ruleset filtered to a pod or a
// policy, and (live) strict mode's revoked flows and the anti-spoofing table beside it.

import { filterReport, inspectRuleset, type InspectReport } from '../inspect/index.js';
import { antiSpoofView, strictModeOf, type AntiSpoofView, type StrictModeView } from '../inspect/strict-antispoof.js';
import { parseIp, type IpFamily } from '../model/index.js';
import type { LoadedRuleset, RulesetReader } from './ruleset.js';

export interface InspectRequest {
  readonly chainPrefix: string;
  /** `--family`, if given. */
  readonly family?: IpFamily | undefined;
  /** `--pod ns/name` or an address. */
  readonly pod?: string | undefined;
  readonly policy?: string | undefined;
}

export type Inspection =
  | { readonly kind: 'no-pod'; readonly family: IpFamily; readonly pod: string; readonly known: readonly string[] }
  | { readonly kind: 'no-policy'; readonly family: IpFamily; readonly policy: string }
  | {
      readonly kind: 'report';
      readonly family: IpFamily;
      readonly loaded: LoadedRuleset;
      readonly report: InspectReport;
      readonly strictMode: StrictModeView;
      /** Live only. */
      readonly antiSpoofing: AntiSpoofView | undefined;
      /** The other family also has this pod: say how to see it. */
      readonly alsoIn?: IpFamily;
    };

/** A RulesetError when no family can be read; a pod or policy the ruleset does not name is an answer, not an error. */
export async function inspectNode(reader: RulesetReader, request: InspectRequest): Promise<Inspection> {
  const { chainPrefix, pod, policy } = request;
  const { family, loaded, alsoIn } = await chooseFamily(reader, request);
  const { ruleset, ipsets } = loaded;
  const full = inspectRuleset(ruleset, ipsets, { chainPrefix });
  const report = filterReport(full, { ...(pod !== undefined ? { pod } : {}), ...(policy !== undefined ? { policy } : {}) });
  if (pod !== undefined && report.pods.length === 0) return { kind: 'no-pod', family, pod, known: full.pods.map((p) => p.pod ?? p.ip) };
  if (policy !== undefined && report.policies.length === 0) return { kind: 'no-policy', family, policy };
  const strictMode = await reader.withRevokedFlows(strictModeOf(ruleset, chainPrefix), family, report.pods);
  const antiSpoofing = reader.live ? antiSpoofView(await reader.antiSpoof()) : undefined;
  return { kind: 'report', family, loaded, report, strictMode, antiSpoofing, ...(alsoIn !== undefined ? { alsoIn } : {}) };
}

interface Chosen {
  readonly family: IpFamily;
  readonly loaded: LoadedRuleset;
  readonly alsoIn?: IpFamily;
}

/**
 * The family inspect shows: --family; else the family of a `--pod` address; else, for `--pod ns/name`, the
 * family that has the pod (IPv4 when both do: the hint names the other); else IPv4, or IPv6 on a node
 * whose ruleset has IPv6 chains only.
 */
async function chooseFamily(reader: RulesetReader, request: InspectRequest): Promise<Chosen> {
  const { pod, chainPrefix } = request;
  const given = request.family ?? (pod !== undefined ? parseIp(pod)?.family : undefined);
  if (given !== undefined) return { family: given, loaded: await reader.read(given) };
  const v4 = await reader.readIfAny(4);
  const has = (loaded: LoadedRuleset | undefined) =>
    loaded !== undefined &&
    pod !== undefined &&
    inspectRuleset(loaded.ruleset, loaded.ipsets, { chainPrefix }).pods.some((p) => p.pod === pod);
  if (v4 && (pod === undefined || has(v4))) {
    const v6 = pod !== undefined ? await reader.readIfAny(6) : undefined;
    return { family: 4, loaded: v4, ...(has(v6) ? { alsoIn: 6 as const } : {}) };
  }
  const v6 = await reader.readIfAny(6);
  if (v6 && (pod === undefined || has(v6))) return { family: 6, loaded: v6 };
  // Neither shows the pod (or neither family reads): report against IPv4 as before, with its own error.
  return { family: 4, loaded: v4 ?? (await reader.read(4)) };
}
