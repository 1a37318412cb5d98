// Plants realistic one-line bugs, one at a time, and runs the tests that should catch each: a mutant the
// tests still pass with marks a corner no test reaches. The file is always restored, even on a failure,
// Ctrl-C or SIGTERM. Usage:
//   npm run mutants                         every mutant against its own test files (kernel ones need root)
//   npm run mutants -- --only a,b           just these (names from --list)
//   npm run mutants -- --unit-only          skip mutants whose tests need the kernel
//   npm run mutants -- --full               run the whole `npm test` per mutant instead (hours)
//   npm run mutants -- --no-baseline        skip the first run of the chosen files with no mutant planted
//   npm run mutants -- --list

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Mutant {
  readonly name: string;
  readonly file: string;
  /** Exact text, found exactly once in `file`, and what replaces it; or `mutate` for a move. */
  readonly find?: string;
  readonly replace?: string;
  readonly mutate?: (source: string) => string;
  readonly why: string;
  /** Test files that must fail with the mutant; `kernel` ones run as root with --runInBand. */
  readonly unit?: readonly string[];
  readonly kernel?: readonly string[];
}

const MUTANTS: readonly Mutant[] = [
  {
    name: 'temp-sets-not-ours',
    file: 'src/plan/observed.ts',
    find: '[46][a-z]:',
    replace: '[46][a-s]:',
    why: 'a retype temp set (nf4t:) left by a crash is not ours, so never destroyed',
    unit: ['test/unit/plan/ownership.test.ts'],
  },
  {
    name: 'hook-repair-first-tick-only',
    file: 'src/daemon/service-guards.ts',
    find: '        });\n      }\n      inputs.reconciler.resyncNow();',
    replace: '        });\n        inputs.reconciler.resyncNow();\n      }',
    why: 'a displaced FORWARD jump is repaired once; a failed repair is never asked for again',
    unit: ['test/unit/daemon/service-guards.test.ts'],
  },
  {
    name: 'cleanup-antispoof-wrong-family',
    file: 'src/antispoof/remove.ts',
    find: 'nft.list(ANTISPOOF_FAMILY, ANTISPOOF_TABLE)',
    replace: "nft.list('inet', ANTISPOOF_TABLE)",
    why: '`netfence cleanup` looks for the anti-spoofing table in the wrong family and leaves it',
    unit: ['test/unit/antispoof/remove.test.ts'],
  },
  {
    name: 'strict-pass-ipv4-only',
    file: 'src/revoke/revoker.ts',
    find: 'for (const state of [desired.v4, desired.v6])',
    replace: 'for (const state of [desired.v4])',
    why: 'strict mode never revokes IPv6 flows',
    unit: ['test/unit/revoke/revoker.test.ts'],
  },
  {
    name: 'input-no-established-return',
    file: 'src/compile/static-chains.ts',
    mutate: (source) =>
      cut(source, '      // Judged on the first packet, as in FORWARD', "        comment: 'established pod flow',\n      },\n"),
    why: "nf-INPUT's ESTABLISHED return is gone: a pod's replies to its node's own connection meet its CNP egress",
    // The golden text catches it too, but `npm run golden` would regenerate that; the packets cannot be.
    kernel: ['test/kernel/cnp-node-input.test.ts'],
  },
  {
    name: 'forward-established-below-dispatch',
    file: 'src/compile/static-chains.ts',
    mutate: moveEstablished,
    why: "nf-FORWARD's ESTABLISHED accepts run after the dispatch jumps: established flows meet the dispatch drops",
    kernel: ['test/kernel/strict-mode.test.ts'],
  },
  // A handful more in the compiler, planner, renderer and tracer.
  {
    name: 'notin-needs-key',
    file: 'src/compile/selectors.ts',
    find: 'return !has || !req.values.includes(labels[req.key] as string);',
    replace: 'return has && !req.values.includes(labels[req.key] as string);',
    why: 'NotIn no longer matches a pod without the label key',
    unit: ['test/unit/compile/semantics.test.ts', 'test/unit/compile/verdicts.test.ts'],
  },
  {
    name: 'endport-ignored',
    file: 'src/compile/peers-ports.ts',
    find: '{ from: p.port, to: p.endPort ?? p.port }',
    replace: '{ from: p.port, to: p.port }',
    why: 'a port range allows its first port only',
    unit: ['test/unit/compile', 'test/golden'],
  },
  {
    name: 'plan-skips-changed-chains',
    file: 'src/plan/plan-chains.ts',
    find: 'if (before && sameRules(before, after)) continue;',
    replace: 'if (before) continue;',
    why: 'a chain that exists is never rewritten, whatever changed in it',
    unit: ['test/unit/reconcile/sync-fake-kernel.test.ts', 'test/unit/plan'],
  },
  {
    name: 'drift-check-on-hash-only',
    file: 'src/plan/rule-identity.ts',
    find: ' && observed.form === rendered.form;',
    replace: ';',
    why: 'a rule edited in place with its nf: comment kept is taken for ours and never repaired',
    unit: ['test/unit/plan/rule-identity.test.ts'],
    kernel: ['test/kernel/drift-rule-identity.test.ts'],
  },
  {
    name: 'limit-reorderable',
    file: 'src/render/rule-form.ts',
    find: "  limit: { name: 'limit', defaults",
    replace: "  limit: { name: 'limit', stateless: true, defaults",
    why: 'a limit moved above the matches that bounded it (it now spends tokens on packets they refuse) is taken for the same rule',
    unit: ['test/unit/render/rule-form.test.ts'],
  },
  {
    name: 'comment-lets-quotes-through',
    file: 'src/render/iptables-render.ts',
    find: String.raw`/[^\w @%+=:,./-]/g`,
    replace: String.raw`/[^\w @%+=:,./"-]/g`,
    why: 'a quote in a rule comment ends the quoted argument early',
    unit: ['test/unit/render', 'test/unit/compile/hostile-input.test.ts'],
  },
  {
    name: 'trace-port-range-exclusive',
    file: 'src/trace/match.ts',
    find: 'packet.dport >= r.from && packet.dport <= r.to',
    replace: 'packet.dport >= r.from && packet.dport < r.to',
    why: 'the tracer reads a port range without its last port (and a single port as empty)',
    unit: ['test/unit/trace', 'test/golden/trace.test.ts'],
  },
  {
    name: 'no-stale-set-cleanup',
    file: 'src/reconcile/reconciler.ts',
    find: 'if (sync.undestroyed?.length) this.scheduleCleanup(sync.undestroyed);',
    replace: '',
    why: 'a stale set the kernel still held waits for the drift check',
    unit: ['test/unit/reconcile/stale-sets.test.ts'],
  },
  // Survivors of a round of planting in the newest modules, each now with a test written from what the user needs.
  {
    name: 'audited-cnp-enforced-to-node',
    file: 'src/compile/endpoint-chains.ts',
    find: '(cnp) => !cnp.audit && cnp.reachesNodes',
    replace: '(cnp) => cnp.reachesNodes',
    why: "an audited ClusterNetworkPolicy is enforced on a pod's traffic to its own node (INPUT)",
    unit: ['test/unit/compile/audit.test.ts'],
    kernel: ['test/kernel/cnp-node-input.test.ts'],
  },
  {
    name: 'audited-np-counts-to-node',
    file: 'src/compile/endpoint-chains.ts',
    find: "policyChainNames(selection, 'egress', ctx, false).length > 0",
    replace: "policyChainNames(selection, 'egress', ctx).length > 0",
    why: "an audited NetworkPolicy stands in for the pod's NetworkPolicy tier on the way to its node: a Baseline Deny there is skipped",
    unit: ['test/unit/compile/audit.test.ts'],
  },
  {
    name: 'admission-release-miscounts',
    file: 'src/observe/connection-admission.ts',
    find: 'if (!this.isReserved(address)) this.others--;',
    replace: 'if (this.isReserved(address)) this.others--;',
    why: "closing a connection gives back the wrong kind of slot: other peers are refused for good, or loopback's reserve vanishes",
    unit: ['test/unit/observe/connection-admission.test.ts', 'test/unit/observe/http-limits.test.ts'],
  },
  {
    name: 'same-data-ignores-key-count',
    file: 'src/compile/memo.ts',
    find: '  if (ka.length !== kb.length) return false;\n',
    replace: '',
    why: 'a chain or settings object that only gained or lost an optional key is taken as unchanged',
    unit: ['test/unit/compile/memo.test.ts', 'test/unit/compile/incremental.test.ts'],
  },
  {
    name: 'budget-full-refused',
    file: 'src/compile/budget.ts',
    find: 'setMembers + added > budget.setMembers',
    replace: 'setMembers + added >= budget.setMembers',
    why: "a policy past its namespace's share that fills what is left of the node's set-member budget exactly is refused (fails closed)",
    unit: ['test/unit/compile/budget-boundary.test.ts', 'test/unit/compile/budget.test.ts'],
  },
  {
    name: 'budget-share-full-refused',
    file: 'src/compile/budget.ts',
    find: 'own.setMembers + ownAdded > share.setMembers',
    replace: 'own.setMembers + ownAdded >= share.setMembers',
    why: "a policy that fills its namespace's share of the set-member budget exactly is taken past its share",
    unit: ['test/unit/compile/budget-boundary.test.ts', 'test/unit/compile/budget.test.ts'],
  },
  {
    name: 'failed-watch-never-rearmed',
    file: 'src/cluster/manifest-watch.ts',
    find: ' && entry.watcher !== undefined) continue;',
    replace: ') continue;',
    why: 'a manifest folder whose watch failed (or never opened) is not watched again: its edits wait for the periodic check',
    unit: ['test/unit/cluster/manifest-watch.test.ts'],
  },
  {
    name: 'new-watch-no-reread',
    file: 'src/cluster/manifest-watch.ts',
    find: '      if (watcher) opened = true;\n',
    replace: '',
    why: 'a file written into a new folder before its watch opened is read only at the periodic check',
    unit: ['test/unit/cluster/manifest-watch.test.ts'],
  },
  {
    name: 'member-delta-trusts-previous',
    file: 'src/plan/plan-sets.ts',
    find: 'if (previous && previous.members.length === observed.length) {',
    replace: 'if (previous) {',
    why: 'a set whose observed members are not the previous apply (another size) is patched from the wrong base',
    unit: ['test/unit/plan', 'test/unit/reconcile/sync-fake-kernel.test.ts'],
  },
  {
    name: 'retype-ignores-family',
    file: 'src/plan/plan-sets.ts',
    find: 'seen.type !== set.type || seen.family !== set.family',
    replace: 'seen.type !== set.type',
    why: 'a set of ours recreated with the other address family is patched instead of rebuilt',
    unit: ['test/unit/plan'],
  },
  // One each in modules no mutant above reaches.
  {
    name: 'flows-namespace-prefix',
    file: 'src/observe/flow-log.ts',
    find: 'p?.startsWith(`${f.namespace}/`)',
    replace: 'p?.startsWith(f.namespace)',
    why: '`netfence drops --namespace shop` also lists the drops of namespace shop-staging',
    unit: ['test/unit/observe/flow-log.test.ts', 'test/unit/observe/flows-query.test.ts'],
  },
  {
    name: 'ipv4-node-never-ready',
    file: 'src/observe/health.ts',
    find: 'if (this.bridgeNf6 === false) {',
    replace: 'if (!this.bridgeNf6) {',
    why: 'a node without IPv6 pods (bridge-nf-call-ip6tables not checked) never reports ready',
    unit: ['test/unit/observe/health.test.ts'],
  },
  {
    name: 'backoff-never-resets',
    file: 'src/reconcile/runner.ts',
    find: '      this.failures = 0;\n',
    replace: '',
    why: 'a sync that succeeds does not reset the retry backoff: the next failure waits as long as the worst one before',
    unit: ['test/unit/reconcile/runner.test.ts'],
  },
  {
    name: 'revoke-judges-service-address',
    file: 'src/revoke/plan.ts',
    find: 'const dst = entry.reply.src;',
    replace: 'const dst = entry.orig.dst;',
    why: 'strict mode judges a Service flow by the ClusterIP the client dialled, not the pod kube-proxy sent it to',
    unit: ['test/unit/revoke'],
  },
  {
    name: 'cidr-contains-wider',
    file: 'src/model/address.ts',
    find: 'outer.family === inner.family && outer.prefix <= inner.prefix && ',
    replace: 'outer.family === inner.family && ',
    why: 'an ipBlock except wider than its cidr (same base address) is taken as inside it',
    unit: ['test/unit/model/address.test.ts', 'test/unit/compile/fail-closed.test.ts'],
  },
  {
    name: 'cnp-subjects-grow-unseen',
    file: 'src/compile/cluster-policy-subjects.ts',
    find: 'a === b || (a.length === b.length && a.every((v, i) => v === b[i]))',
    replace: 'a === b || a.every((v, i) => v === b[i])',
    why: "a pod that joins a ClusterNetworkPolicy's subjects after the ones it had is not judged by it",
    unit: ['test/unit/compile/cluster-policy.test.ts', 'test/unit/compile/incremental.test.ts'],
  },
  {
    name: 'set-names-ignore-prefix',
    file: 'src/compile/names.ts',
    find: 'const id = `${head}|${canonicalKey}`;',
    replace: 'const id = `${family}${kind}|${canonicalKey}`;',
    why: 'set names are remembered without their prefix: a compile with another ipsetPrefix gets the names of the first',
    unit: ['test/unit/compile/names.test.ts'],
  },
  {
    name: 'manifest-at-limit-refused',
    file: 'src/cluster/manifests.ts',
    find: 'if (size > maxFileBytes) {',
    replace: 'if (size >= maxFileBytes) {',
    why: 'a manifest file of exactly manifestMaxFileBytes is not read',
    unit: ['test/unit/cluster/manifests-size.test.ts'],
  },
  {
    name: 'pod-cidr-node-over-config',
    file: 'src/config/load.ts',
    find: '[config.podCidrs, fromNode, learned.flannel',
    replace: '[fromNode, config.podCidrs, learned.flannel',
    why: "the Node's spec.podCIDRs win over the pod CIDRs the operator configured",
    unit: ['test/unit/config/pod-cidrs.test.ts'],
  },
  {
    name: 'antispoof-arp-probe-dropped',
    file: 'src/antispoof/model.ts',
    find: "return [...binding.ipv4, '0.0.0.0'];",
    replace: 'return binding.ipv4;',
    why: 'an ARP probe from 0.0.0.0 (RFC 5227 duplicate address detection) is dropped as spoofed',
    unit: ['test/unit/antispoof'],
  },
  {
    name: 'negated-match-all-dropped',
    file: 'src/render/rule-form.ts',
    find: "(matchesAll && !negated ? '' : normal)",
    replace: "(matchesAll ? '' : normal)",
    why: 'a rule of ours switched off with `! -s 0.0.0.0/0` compares equal to the rule we wrote: never repaired',
    unit: ['test/unit/render/rule-form.test.ts'],
    kernel: ['test/kernel/drift-hidden-edits.test.ts'],
  },
  {
    name: 'legacy-listing-not-read',
    file: 'src/dataplane/iptables.ts',
    find: "if (backend !== 'legacy') return save();",
    replace: 'return save();',
    why: 'on iptables-legacy a rule of ours switched off with `! -i +` saves as we wrote it: never repaired',
    kernel: ['test/kernel/drift-hidden-edits.test.ts'],
  },
  {
    name: 'listing-hidden-interface-ignored',
    file: 'src/render/legacy-listing.ts',
    find: 'if (stated === column) continue;',
    replace: 'continue;',
    why: 'the listing is read but what the save hid is never written into the rule',
    unit: ['test/unit/render/legacy-listing.test.ts'],
  },
  {
    name: 'set-del-with-member-options',
    file: 'src/render/ipset.ts',
    find: '${elementOf(m)}',
    replace: '${m}',
    why: 'a member someone gave `nomatch` is deleted with it, which ipset refuses: the except stays open',
    unit: ['test/unit/reconcile/set-repair.test.ts'],
  },
  {
    name: 'one-set-holds-back-the-sync',
    file: 'src/reconcile/syncer.ts',
    find: 'if (!refusedLine) throw err;',
    replace: 'throw err;',
    why: 'one set ipset refuses fails the whole sync: every other set and every chain change wait',
    unit: ['test/unit/reconcile/set-repair.test.ts'],
    kernel: ['test/kernel/ipset-member-repair.test.ts'],
  },
  {
    name: 'refused-set-never-rebuilt',
    file: 'src/reconcile/syncer.ts',
    find: 'if (step.rebuild !== undefined) {',
    replace: 'if (step.rebuild === "never") {',
    why: 'a set whose own lines are refused (recreated with a small maxelem) is retried, never rebuilt',
    unit: ['test/unit/reconcile/set-repair.test.ts'],
  },
];

/** `source` without the text from `from` to the end of `through` (each found exactly once). */
function cut(source: string, from: string, through: string): string {
  const start = source.indexOf(from);
  const end = source.indexOf(through, start);
  if (start < 0 || end < 0 || source.indexOf(from, start + 1) >= 0) throw new Error('the text to cut no longer reads as expected');
  return source.slice(0, start) + source.slice(end + through.length);
}

/** nf-FORWARD's two ESTABLISHED accepts, moved from above the mark clear to below the dispatch jumps. */
function moveEstablished(source: string): string {
  const start = source.indexOf("      ...(['in-iface', 'out-iface'] as const).map((kind) => ({");
  const end = source.indexOf('      })),\n', start) + '      })),\n'.length;
  const accept = source.indexOf('      // Accepting here rather than at the end of FORWARD');
  if (start < 0 || end < start || accept < end) throw new Error('nf-FORWARD no longer reads as expected');
  return source.slice(0, start) + source.slice(end, accept) + source.slice(start, end) + source.slice(accept);
}

const JEST = ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js'];
let child: ChildProcess | undefined;
let planted: { file: string; original: string } | undefined;

function restore(): void {
  if (planted) writeFileSync(planted.file, planted.original);
  planted = undefined;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (child?.pid !== undefined) child.kill('SIGTERM');
    restore();
    console.error(`\nmutants: interrupted (${signal}); the planted file is restored`);
    process.exit(130);
  });
}
process.on('exit', restore);

function runQuiet(command: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve) => {
    child = spawn(command, args, { stdio: ['ignore', 'ignore', 'ignore'] });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.on('error', () => resolve(1));
  });
}

/** The titles of the tests that failed, from jest's --json report. */
function failedTests(report: string): string[] {
  try {
    const r = JSON.parse(readFileSync(report, 'utf8')) as { testResults: { assertionResults: { status: string; fullName: string }[] }[] };
    return r.testResults.flatMap((f) => f.assertionResults.filter((a) => a.status === 'failed').map((a) => a.fullName));
  } catch {
    return [];
  }
}

/** Exit status of the mutant's tests (0: all passed), and which failed. */
async function runTests(m: Pick<Mutant, 'unit' | 'kernel'>, full: boolean): Promise<{ status: number; failed: string[] }> {
  if (full) return { status: await runQuiet('npm', ['test']), failed: [] };
  const dir = mkdtempSync(join(tmpdir(), 'nf-mutants-'));
  const failed: string[] = [];
  let status = 0;
  try {
    const jest = async (project: readonly string[], files: readonly string[], n: number) => {
      const report = join(dir, `${n}.json`);
      const code = await runQuiet('node', [...JEST, ...project, '--json', `--outputFile=${report}`, '--', ...files]);
      failed.push(...failedTests(report));
      return code;
    };
    if (m.unit?.length) status ||= await jest(['--selectProjects', 'unit', 'golden'], m.unit, 1);
    if (m.kernel?.length && status === 0) status ||= await jest(['--selectProjects', 'kernel', '--runInBand'], m.kernel, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { status, failed };
}

function plant(m: Mutant): void {
  const original = readFileSync(m.file, 'utf8');
  let mutated: string;
  if (m.mutate) mutated = m.mutate(original);
  else {
    const find = m.find ?? '';
    const count = original.split(find).length - 1;
    if (count !== 1) throw new Error(`${m.name}: the text to mutate occurs ${count} times in ${m.file} (expected once); update the mutant`);
    mutated = original.replace(find, () => m.replace ?? '');
  }
  if (mutated === original) throw new Error(`${m.name}: planting it changed nothing in ${m.file}`);
  planted = { file: m.file, original };
  writeFileSync(m.file, mutated);
}

async function main(argv: readonly string[]): Promise<number> {
  const flag = (name: string) => argv.includes(name);
  const onlyAt = argv.indexOf('--only');
  const only = onlyAt >= 0 ? new Set((argv[onlyAt + 1] ?? '').split(',')) : undefined;
  const unknown = [...(only ?? [])].filter((n) => !MUTANTS.some((m) => m.name === n));
  if (unknown.length) throw new Error(`no mutant named ${unknown.join(', ')} (see --list)`);
  const root = process.getuid?.() === 0;
  const chosen = MUTANTS.filter((m) => (!only || only.has(m.name)) && !(m.kernel && (flag('--unit-only') || !root)));
  if (flag('--list')) {
    for (const m of MUTANTS) console.log(`${m.name.padEnd(36)} ${m.file}: ${m.why}`);
    return 0;
  }
  const full = flag('--full');
  const skipped = MUTANTS.filter((m) => (!only || only.has(m.name)) && !chosen.includes(m));
  if (skipped.length) console.log(`skipped (need root for kernel tests): ${skipped.map((m) => m.name).join(', ')}`);
  if (!flag('--no-baseline')) {
    const baseline = {
      unit: [...new Set(chosen.flatMap((m) => m.unit ?? []))],
      kernel: [...new Set(chosen.flatMap((m) => m.kernel ?? []))],
    };
    process.stdout.write('baseline (no mutant) … ');
    const { status, failed } = await runTests(baseline, full);
    console.log(status === 0 ? 'passes' : `FAILS: ${failed.join('; ')}`);
    if (status !== 0) throw new Error('the tests fail with no mutant planted: a kill would mean nothing');
  }
  let survived = 0;
  for (const m of chosen) {
    const t0 = Date.now();
    plant(m);
    let result: { status: number; failed: string[] };
    try {
      result = await runTests(m, full);
    } finally {
      restore();
    }
    const verdict = result.status === 0 ? 'SURVIVED' : 'killed';
    if (result.status === 0) survived++;
    console.log(`${verdict.padEnd(9)} ${m.name.padEnd(36)} ${((Date.now() - t0) / 1000).toFixed(0).padStart(5)} s  ${m.why}`);
    for (const name of result.failed.slice(0, 3)) console.log(`            failed: ${name}`);
    if (result.failed.length > 3) console.log(`            … and ${result.failed.length - 3} more`);
  }
  console.log(`\n${chosen.length - survived} killed, ${survived} survived of ${chosen.length}${full ? ' (npm test per mutant)' : ''}`);
  return survived === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    restore();
    console.error(`mutants: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  },
);
