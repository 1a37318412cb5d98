// `--saved FILE…`: the files a command reads instead of the live kernel. Splitting them into each family's
// filter table and the ipsets is the text layer's (src/render/saved-files.ts).

import { splitSavedDumps, SavedDumpError, type SavedDumpFiles } from '../render/index.js';

export { SavedDumpError, type SavedDumpFiles } from '../render/index.js';

/** `--saved FILE` (repeatable): the files' texts, or a SavedDumpError naming the unreadable one. */
export async function readSavedDumps(paths: readonly string[], ipsetPrefix: string): Promise<SavedDumpFiles> {
  const { readFileSync } = await import('node:fs');
  const inputs = paths.map((name) => {
    try {
      return { name, text: readFileSync(name, 'utf8') };
    } catch (err) {
      throw new SavedDumpError(`cannot read ${name}: ${(err as Error).message}`);
    }
  });
  return splitSavedDumps(inputs, ipsetPrefix);
}
