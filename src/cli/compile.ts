// `netfence compile`: the desired ipsets and rules of one node from manifests, printed as the restore
// payloads. No kernel, no API server: this module loads neither.

import { compile } from '../compile/index.js';
import { renderFullRestore, renderIpsetRestore } from '../render/index.js';
import type { Io } from './commands.js';
import { configFrom, loadResources, nodeSettings, parseCommand } from './context.js';
import { EXIT_INCOMPLETE_SOURCE, printProblems, refuseIncomplete } from './source-errors.js';

export async function compileCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('compile', argv);
  const config = configFrom(parsed);
  const cluster = loadResources(parsed);
  if (refuseIncomplete(io, 'compile', cluster)) return EXIT_INCOMPLETE_SOURCE;
  const settings = await nodeSettings(config, cluster.snapshot);
  const result = compile(cluster.snapshot, settings);
  printProblems(io, [...cluster.problems, ...result.problems]);
  const state = parsed.values['ipv6'] === true ? result.desired.v6 : result.desired.v4;
  io.out(renderIpsetRestore(state.ipsets));
  io.out(renderFullRestore(state));
  return 0;
}
