// `netfence compile`: the desired ipsets and rules of one node from manifests, printed as the restore
// payloads. No kernel, no API server: this module loads neither.

import { compileForNode, restorePayloads } from '../commands/compile.js';
import type { Io } from './command-specs.js';
import { configFrom, loadResources, manifestLimits, parseCommand, requireKnownNode, UsageError } from './context.js';
import { EXIT_INCOMPLETE_SOURCE, printProblems, refuseIncomplete } from './source-errors.js';
import type { IpFamily } from '../model/index.js';

export async function compileCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('compile', argv);
  const config = configFrom(parsed);
  const cluster = loadResources(parsed, manifestLimits(config));
  if (refuseIncomplete(io, 'compile', cluster)) return EXIT_INCOMPLETE_SOURCE;
  requireKnownNode(cluster.snapshot, config.nodeName, 'the manifests');
  const result = await compileForNode(config, cluster.snapshot);
  printProblems(io, [...cluster.problems, ...result.problems]);
  for (const payload of restorePayloads(result.desired, familiesToPrint(parsed.values['family'], parsed.values['ipv6'] === true)))
    io.out(payload);
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
