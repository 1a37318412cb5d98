// One node's desired state from a loaded cluster (the settings read as the daemon reads them), and
// `netfence compile`'s restore payloads of it. No kernel, no API server: this module loads neither.

import { compile, type CompileResult } from '../compile/index.js';
import type { NodeSettingsLog } from '../config/node-settings.js';
import { nodeSettingsOnce } from '../config/node-settings.js';
import type { DaemonConfig } from '../config/schema.js';
import type { ClusterSnapshot, DesiredState, FamilyState, IpFamily } from '../model/index.js';
import { compileHeader, renderFullRestore, renderIpsetRestore } from '../render/index.js';

/** Compiles the snapshot for the configured node; `log` hears the warning when no pod CIDR is known. */
export async function compileForNode(config: DaemonConfig, snapshot: ClusterSnapshot, log?: NodeSettingsLog): Promise<CompileResult> {
  return compile(snapshot, await nodeSettingsOnce(config, snapshot, log));
}

export const familyState = (desired: DesiredState, family: IpFamily): FamilyState => (family === 4 ? desired.v4 : desired.v6);

/**
 * The ipset and iptables restore payloads of each family, in order. `families` undefined: IPv4 alone with no
 * header line, exactly as compile always printed; otherwise each family under the header that lets
 * `--saved` tell the families apart (and says which tool each payload is for).
 */
export function restorePayloads(desired: DesiredState, families: readonly IpFamily[] | undefined): string[] {
  return (families ?? [4]).flatMap((family) => {
    const state = familyState(desired, family);
    return [...(families ? [compileHeader(family)] : []), renderIpsetRestore(state.ipsets), renderFullRestore(state)];
  });
}
