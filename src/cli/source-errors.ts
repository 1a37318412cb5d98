// The one-shot commands' answer to manifests that could not be read completely: print every problem and
// stop before anything is compiled into the kernel (exit 2). Kept apart from commands-oneshot.ts so that
// `compile` can use it without loading the code that runs iptables.

import { incompleteRead } from '../cluster/manifests.js';
import { formatProblem, type Problem } from '../model/index.js';
import type { Io } from './command-specs.js';
import type { LoadedCluster } from './context.js';

/** Exit code of a command whose manifests could not all be read. */
export const EXIT_INCOMPLETE_SOURCE = 2;

export const printProblems = (io: Io, problems: readonly Problem[]): void => {
  for (const p of problems) io.err(`${formatProblem(p)}\n`);
};

/**
 * Manifests that could not be read completely (a misspelt path, a syntax error, a rejected document, a
 * file caught mid-write…) would compile to a smaller cluster than the operator meant, and applying that
 * removes the rules of whatever was lost: an opening made by a typo. So the command stops before the
 * kernel is touched and names each file/document/line. Invalid *policies* are not in this list: they
 * are kept and enforced fail-closed, and reported with the compile problems.
 */
export function refuseIncomplete(io: Io, command: string, cluster: LoadedCluster): boolean {
  const errors = incompleteRead(cluster.problems);
  if (errors.length === 0) return false;
  printProblems(io, cluster.problems);
  io.err(
    `netfence ${command}: ${errors.length} manifest error(s) above: the resources were not read completely; stopped before touching the kernel\n`,
  );
  return true;
}
