// A second, different build of netfence for upgrade tests: an earlier commit of this repository
// exported with `git archive` into a temp directory, sharing this checkout's node_modules (its
// dependencies are the same), and compiled with tsc. Undefined when the history is not available
// (a shallow clone): the caller says so loudly instead of passing.

import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

export interface OldBuild {
  readonly commit: string;
  /** `node <main> daemon …` runs this build. */
  readonly main: string;
  remove(): void;
}

export async function buildCommit(rev: string, repo = process.cwd()): Promise<OldBuild | undefined> {
  const commit = await execa('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: repo, reject: false });
  if (commit.exitCode !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'nft-oldbuild-'));
  try {
    await execa('sh', ['-c', `git archive ${commit.stdout.trim()} | tar -x -C "${dir}"`], { cwd: repo });
    symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));
    await execa(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: dir });
    const main = join(dir, 'dist', 'cli', 'main.js');
    if (!existsSync(main)) throw new Error(`no ${main} after building ${rev}`);
    return { commit: commit.stdout.trim(), main, remove: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
