// `netfence compile`: the desired ipsets and rules of one node from manifests, printed as the restore
// payloads. No kernel, no API server: this module loads neither.

import { compile } from '../compile/index.js';
import { compileHeader, renderFullRestore, renderIpsetRestore } from '../render/index.js';
import type { Io } from './command-specs.js';
import { configFrom, loadResources, manifestLimits, nodeSettings, parseCommand, requireKnownNode, UsageError } from './context.js';
import { EXIT_INCOMPLETE_SOURCE, printProblems, refuseIncomplete } from './source-errors.js';
import type { IpFamily } from '../model/index.js';

export async function compileCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('compile', argv);
  const config = configFrom(parsed);
  const cluster = loadResources(parsed, manifestLimits(config));
  if (refuseIncomplete(io, 'compile', cluster)) return EXIT_INCOMPLETE_SOURCE;
  requireKnownNode(cluster.snapshot, config.nodeName, 'the manifests');
  const settings = await nodeSettings(config, cluster.snapshot);
  const result = compile(cluster.snapshot, settings);
  printProblems(io, [...cluster.problems, ...result.problems]);
  const families = familiesToPrint(parsed.values['family'], parsed.values['ipv6'] === true);
  for (const family of families ?? [4]) {
    const state = family === 6 ? result.desired.v6 : result.desired.v4;
    // The header lets `--saved` tell the families apart (and says which tool each payload is for).
    if (families) io.out(compileHeader(family));
    io.out(renderIpsetRestore(state.ipsets));
    io.out(renderFullRestore(state));
  }
  return 0;
}

/**
 * `--family 4|6|both` (`--ipv6` is `--family 6`); undefined for neither, which prints IPv4 exactly as
 * compile always did (no header line).
 */
function familiesToPrint(flag: unknown, ipv6: boolean): IpFamily[] | undefined {
  if (flag === undefined) return ipv6 ? [6] : undefined;
  const families: Record<string, IpFamily[]> = { '4': [4], '6': [6], both: [4, 6] };
  const chosen = typeof flag === 'string' ? families[flag] : undefined;
  if (!chosen) throw new UsageError(`--family must be 4, 6 or both, not "${String(flag)}"`);
  if (ipv6 && !chosen.includes(6)) throw new UsageError(`--ipv6 means --family 6; it contradicts --family ${String(flag)}`);
  return chosen;
}
