// Running a tool when the process is out of file descriptors must be an ordinary, catchable failure:
// with execa 9 it crashed the whole daemon through an unhandled 'error' event (spawn EMFILE). Each case runs
// in a child Node process under `prlimit --nofile=1024`, which first uses up its descriptors, then calls the
// built `run()` (dist/, built before the tests), and reports what happened.

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const script = `
import { openSync } from 'node:fs';
const { run } = await import(${JSON.stringify(join(process.cwd(), 'dist/dataplane/exec.js'))});
const fds = [];
try { for (;;) fds.push(openSync('/dev/null', 'r')); } catch {}
try { await run('true', []); console.log('ran'); } catch (e) { console.log('threw ' + e.name); }
`;

describe('run() without free file descriptors', () => {
  it('throws a DataplaneCommandError instead of crashing the process', () => {
    let out: string;
    try {
      out = execFileSync('prlimit', ['--nofile=1024:1024', process.execPath, '--input-type=module', '-e', script], {
        encoding: 'utf8',
        timeout: 20_000,
      });
    } catch (err) {
      const e = err as { status: number | null; stdout: string; stderr: string };
      throw new Error(`the child crashed (status ${e.status}): ${e.stdout}\n${e.stderr.split('\n').slice(0, 6).join('\n')}`, {
        cause: err,
      });
    }
    expect(out.trim()).toBe('threw DataplaneCommandError');
  });
});
