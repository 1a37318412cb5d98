// Records what the real `ipset` tool and the real kernel say to each other, as fixtures for the ipset netlink
// codec's unit tests (test/unit/dataplane/fixtures/ipset-netlink.json):
//   sudo node --import ./scripts/register-ts.mjs scripts/capture-ipset-netlink.ts
//
// In a scratch network namespace it creates one set of every type netfence uses (hash:ip, hash:net,
// hash:ip,port, both families), runs `ipset` commands under `strace -e write=3 -e read=3` (fd 3 is libipset's
// netlink socket) and keeps, per case, the bytes of the last message the tool sent and of the kernel's reply to
// it. Sequence numbers and port ids differ on every run; the tests compare everything else.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../src/dataplane/exec.js';

interface Case {
  readonly name: string;
  /** `ipset` arguments. */
  readonly args: readonly string[];
  /** stdin, for `restore`. */
  readonly input?: string;
}

const SETS = [
  'create s4 hash:ip family inet',
  'create s6 hash:ip family inet6',
  'create n4 hash:net family inet',
  'create n6 hash:net family inet6',
  'create p4 hash:ip,port family inet',
  'create p6 hash:ip,port family inet6',
  // Learned sets of egress by DNS name: members with their own timeout and a provenance comment.
  'create t4 hash:ip family inet timeout 30 maxelem 2 comment',
  'create t6 hash:ip family inet6 timeout 30 comment',
];

const CASES: readonly Case[] = [
  { name: 'protocol', args: ['version'] },
  { name: 'add one, no -exist (IPSET_ATTR_DATA, NLM_F_EXCL)', args: ['add', 's4', '10.1.2.3'] },
  { name: 'restore hash:ip inet', args: ['-exist', 'restore'], input: 'add s4 10.1.2.4\nadd s4 10.1.2.5\n' },
  { name: 'restore hash:ip inet6', args: ['-exist', 'restore'], input: 'add s6 fd00::1\nadd s6 fd00::a:2\n' },
  { name: 'restore hash:net inet', args: ['-exist', 'restore'], input: 'add n4 10.9.0.0/16\nadd n4 10.10.0.1\n' },
  { name: 'restore hash:net inet nomatch', args: ['-exist', 'restore'], input: 'add n4 10.30.0.0/16 nomatch\nadd n4 10.31.0.0/16\n' },
  { name: 'restore hash:net inet6', args: ['-exist', 'restore'], input: 'add n6 fd00:1::/64\nadd n6 fd00:2::5\n' },
  {
    name: 'restore hash:ip,port inet',
    args: ['-exist', 'restore'],
    input: 'add p4 10.1.2.3,tcp:80\nadd p4 10.1.2.4,udp:53\nadd p4 10.1.2.5,sctp:9000\n',
  },
  { name: 'restore hash:ip,port inet6', args: ['-exist', 'restore'], input: 'add p6 fd00::1,tcp:8080\n' },
  { name: 'restore del hash:ip inet', args: ['-exist', 'restore'], input: 'del s4 10.1.2.4\ndel s4 10.1.2.99\n' },
  {
    name: 'error in the middle (/0 is not a valid hash:net cidr)',
    args: ['-exist', 'restore'],
    input: 'add n4 10.20.0.0/16\nadd n4 10.0.0.0/0\nadd n4 10.21.0.0/16\n',
  },
  {
    name: 'restore hash:ip inet timeout comment',
    args: ['-exist', 'restore'],
    input: 'add t4 10.1.2.3 timeout 60 comment "1764000000 good.example"\nadd t4 10.1.2.4 timeout 86400 comment "1764000001 a.b.example"\n',
  },
  {
    name: 'restore hash:ip inet6 timeout comment',
    args: ['-exist', 'restore'],
    input: 'add t6 fd00::1 timeout 30 comment "1764000000 good.example"\n',
  },
  { name: 'add to a full set (maxelem 2)', args: ['-exist', 'add', 't4', '10.1.2.5', 'timeout', '60', 'comment', '1764000002 x.example'] },
  { name: 'del of an absent member without -exist', args: ['del', 's4', '10.99.0.1'] },
  { name: 'add to a set that does not exist', args: ['add', 'nosuchset', '10.1.2.3'] },
];

interface Dumped {
  readonly dir: 'sent' | 'received';
  readonly hex: string;
}

/** The hex dumps strace printed after each sendto/recvmsg, in order. */
function dumps(trace: string): Dumped[] {
  const out: Dumped[] = [];
  let current: { dir: Dumped['dir']; bytes: string[] } | undefined;
  const flush = (): void => {
    if (current && current.bytes.length > 0) out.push({ dir: current.dir, hex: current.bytes.join('') });
    current = undefined;
  };
  for (const line of trace.split('\n')) {
    if (/^(\d+ +)?sendto\(3,/.test(line)) {
      flush();
      current = { dir: 'sent', bytes: [] };
    } else if (/^(\d+ +)?recvmsg\(3,/.test(line)) {
      flush();
      current = { dir: 'received', bytes: [] };
    } else {
      // " | 00010  02 00 00 00 05 00 01 00  07 00 00 00              ............     |"
      const m = /^ \| [0-9a-f]{5} {2}((?:[0-9a-f]{2} {1,2}){1,16})/.exec(line);
      if (m && current) current.bytes.push(m[1]!.replace(/\s+/g, ''));
    }
  }
  flush();
  return out;
}

async function main(): Promise<void> {
  const ns = `nft-ipcap-${Math.random().toString(16).slice(2, 8)}`;
  const tmp = mkdtempSync(join(tmpdir(), 'nft-ipcap-'));
  await run('ip', ['netns', 'add', ns]);
  try {
    for (const line of SETS) await run('ipset', line.split(' '), { netns: ns });
    const { stdout: version } = await run('ipset', ['version'], { netns: ns });
    const cases = [];
    for (const c of CASES) {
      const file = join(tmp, 'trace');
      const strace = ['strace', '-o', file, '-e', 'trace=sendto,recvmsg', '-e', 'write=3', '-e', 'read=3', 'ipset', ...c.args];
      const result = await run('ip', ['netns', 'exec', ns, ...strace], c.input !== undefined ? { input: c.input } : {}).then(
        () => ({ ok: true, stderr: '' }),
        (err: Error & { stderr?: string }) => ({ ok: false, stderr: (err.stderr ?? err.message).trim() }),
      );
      const all = dumps(readFileSync(file, 'utf8'));
      const lastSent = all.map((d) => d.dir).lastIndexOf('sent');
      cases.push({
        name: c.name,
        command: `ipset ${c.args.join(' ')}`,
        ...(c.input !== undefined ? { input: c.input } : {}),
        exit: result.ok ? 0 : 1,
        ...(result.stderr ? { stderr: result.stderr } : {}),
        request: all[lastSent]?.hex,
        replies: all.slice(lastSent + 1).map((d) => d.hex),
      });
    }
    const { stdout: saved } = await run('ipset', ['save'], { netns: ns });
    const fixture = {
      how: 'scripts/capture-ipset-netlink.ts: strace -e write=3 -e read=3 of the ipset tool in a scratch netns; request = the last message the tool sent, replies = what the kernel answered to it',
      captured: new Date().toISOString(),
      tool: version.trim(),
      kernel: (await run('uname', ['-r'])).stdout.trim(),
      sets: SETS,
      cases,
      saveAfter: saved,
    };
    const out = new URL('../test/unit/dataplane/fixtures/ipset-netlink.json', import.meta.url);
    writeFileSync(out, `${JSON.stringify(fixture, null, 2)}\n`);
    console.log(`wrote ${out.pathname}: ${cases.length} cases`);
  } finally {
    await run('ip', ['netns', 'del', ns]).catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
