// `netfence compile`: the desired ipsets and rules of one node from manifests, printed as the restore
// payloads. No kernel, no API server: this module loads neither.

import { compile } from '../compile/index.js';
import { formatProblem } from '../model/index.js';
import { renderFullRestore, renderIpsetRestore } from '../render/index.js';
import type { Io } from './commands.js';
import { configFrom, loadResources, nodeSettings, parseCommand } from './context.js';

export async function compileCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('compile', argv);
  const config = configFrom(parsed);
  const cluster = loadResources(parsed);
  const settings = await nodeSettings(config, cluster.snapshot);
  const result = compile(cluster.snapshot, settings);
  for (const p of [...cluster.problems, ...result.problems]) io.err(`${formatProblem(p)}\n`);
  const state = parsed.values['ipv6'] === true ? result.desired.v6 : result.desired.v4;
  io.out(renderIpsetRestore(state.ipsets));
  io.out(renderFullRestore(state));
  return 0;
}
