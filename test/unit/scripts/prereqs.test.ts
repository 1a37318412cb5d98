// scripts/lib/prereqs.sh `ensure_system_packages` on machines faked down to their installed package set: a
// PATH holding only the tools those packages provide, `id` saying root, and an `apt-get` that installs like
// dpkg does — refusing, with dpkg's exit status, a package whose file another installed package already owns
// (Debian's kubernetes-client ships /usr/bin/kubectl, as do Kubernetes' own `kubectl` package and cloud SDKs).

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = process.cwd();

/** The tools each Debian package provides (what the fake dpkg checks for file conflicts). */
const PROVIDES: Readonly<Record<string, readonly string[]>> = {
  iptables: ['iptables-nft-restore', 'iptables-legacy-restore'],
  ipset: ['ipset'],
  iproute2: ['ip'],
  conntrack: ['conntrack'],
  python3: ['python3'],
  nftables: ['nft'],
  'kubernetes-client': ['kubectl'],
  // The headless browser the map page is tested in.
  chromium: ['chromium'],
  // Not Debian's: Kubernetes' own apt repository.
  kubectl: ['kubectl'],
};

interface Machine {
  /** Installed packages: their tools are on PATH, and they own those files. */
  readonly installed: readonly string[];
  readonly uid?: number;
}

interface Outcome {
  readonly status: number | null;
  readonly stderr: string;
  /** Each `apt-get install` call's package list, in order. */
  readonly installs: string[][];
}

function runOn(machine: Machine): Outcome {
  const dir = mkdtempSync(join(tmpdir(), 'nf-prereqs-'));
  try {
    const bin = join(dir, 'bin');
    spawnSync('/bin/mkdir', [bin]);
    const script = (name: string, body: string) => {
      writeFileSync(join(bin, name), `#!/bin/bash\n${body}\n`);
      chmodSync(join(bin, name), 0o755);
    };
    const owners = new Map<string, string>();
    for (const pkg of machine.installed) {
      for (const tool of PROVIDES[pkg] ?? []) {
        owners.set(tool, pkg);
        script(tool, 'exit 0');
      }
    }
    script('id', `echo ${machine.uid ?? 0}`);
    const log = join(dir, 'apt.log');
    // The fake apt-get: `update` succeeds; `install` fails as dpkg does ("trying to overwrite '/usr/bin/kubectl',
    // which is also in package kubectl", exit 100) when a requested package's file belongs to an installed one.
    const owned = [...owners].map(([tool, pkg]) => `[${tool}]=${pkg}`).join(' ');
    const provides = Object.entries(PROVIDES)
      .map(([pkg, tools]) => `[${pkg}]="${tools.join(' ')}"`)
      .join(' ');
    script(
      'apt-get',
      `declare -A OWNER=(${owned}) PROVIDES=(${provides})
[ "$1" = update ] && exit 0
shift; pkgs=()
for a in "$@"; do case "$a" in -*) ;; *) pkgs+=("$a");; esac; done
echo "\${pkgs[*]}" >> ${log}
for p in "\${pkgs[@]}"; do
  for t in \${PROVIDES[$p]}; do
    o=\${OWNER[$t]:-}
    if [ -n "$o" ] && [ "$o" != "$p" ]; then
      echo "dpkg: error processing archive $p.deb: trying to overwrite '/usr/bin/$t', which is also in package $o" >&2
      echo "E: Sub-process /usr/bin/dpkg returned an error code (1)" >&2
      exit 100
    fi
  done
done
exit 0`,
    );
    const result = spawnSync(
      '/bin/bash',
      ['--norc', '--noprofile', '-c', 'set -euo pipefail; source scripts/lib/prereqs.sh; ensure_system_packages'],
      {
        cwd: ROOT,
        env: { PATH: bin, HOME: dir },
        encoding: 'utf8',
      },
    );
    const installs = existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(' '))
      : [];
    return { status: result.status, stderr: result.stderr, installs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const EVERY_DEBIAN_PACKAGE = ['iptables', 'ipset', 'iproute2', 'conntrack', 'python3', 'nftables', 'kubernetes-client', 'chromium'];

describe('scripts/lib/prereqs.sh installs only the packages of missing tools', () => {
  it('kubectl from another package and nft missing: installs nftables alone, and succeeds', () => {
    const out = runOn({ installed: ['iptables', 'ipset', 'iproute2', 'conntrack', 'python3', 'kubectl', 'chromium'] });
    expect(out.installs).toEqual([['nftables']]);
    expect(out.status).toBe(0);
  });

  it('every tool present (kubectl from another package): asks apt for nothing', () => {
    const out = runOn({ installed: ['iptables', 'ipset', 'iproute2', 'conntrack', 'python3', 'nftables', 'kubectl', 'chromium'] });
    expect(out.installs).toEqual([]);
    expect(out.status).toBe(0);
  });

  it('a bare machine: installs each package once', () => {
    const out = runOn({ installed: [] });
    expect(out.installs.length).toBe(1);
    expect([...out.installs[0]!].sort()).toEqual([...EVERY_DEBIAN_PACKAGE].sort());
    expect(out.status).toBe(0);
  });

  it('not root: names only the missing packages, installs nothing, and goes on', () => {
    const out = runOn({ installed: ['iptables', 'ipset', 'iproute2', 'conntrack', 'python3', 'kubectl', 'chromium'], uid: 1000 });
    expect(out.installs).toEqual([]);
    expect(out.status).toBe(0);
    expect(out.stderr).toContain('apt-get install -y nftables\n');
  });
});
