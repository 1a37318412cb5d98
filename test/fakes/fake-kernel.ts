// The kernel port (src/reconcile/syncer.ts KernelPort) over validating in-memory fakes: one FakeIptables
// per family sharing one FakeIpset, as a network namespace shares its ipsets between iptables and
// ip6tables. Tests script faults with `failNext` (the next matching call throws like the real tool,
// writing nothing) and make foreign edits with `foreignIptables`/`foreignIpset`; `writes` records every
// restore input, so a test can assert a sync wrote nothing, or only the chains it had to.

import { DataplaneCommandError, linesAround } from '../../src/dataplane/errors.js';
import type { IpFamily } from '../../src/model/index.js';
import type { KernelPort } from '../../src/reconcile/syncer.js';
import { FakeIpset } from './fake-ipset.js';
import { FakeIptables, FakeRestoreError } from './fake-iptables.js';

export type FakeOp = 'saveFilter' | 'restoreFilter' | 'ipsetSave' | 'ipsetRestore';

export interface FakeWrite {
  readonly op: 'restoreFilter' | 'ipsetRestore';
  readonly family?: IpFamily;
  readonly text: string;
}

export class FakeKernel implements KernelPort {
  readonly ipset: FakeIpset;
  readonly writes: FakeWrite[] = [];
  readonly calls: FakeOp[] = [];
  private readonly iptables = new Map<IpFamily, FakeIptables>();
  private readonly faults: { op: FakeOp; error: Error }[] = [];
  /** Sets the kernel still holds a reference to with no rule using them (holdSet). */
  private readonly held = new Set<string>();

  constructor(families: readonly IpFamily[] = [4, 6]) {
    this.ipset = new FakeIpset(() => {
      const used = new Set<string>();
      for (const t of this.iptables.values()) for (const name of t.referencedSets()) used.add(name);
      for (const name of this.held) used.add(name);
      return used;
    });
    for (const family of families) this.iptables.set(family, new FakeIptables(family, (name) => this.ipset.familyOf(name)));
  }

  supports(family: IpFamily): boolean {
    return this.iptables.has(family);
  }

  async saveFilter(family: IpFamily): Promise<string> {
    this.enter('saveFilter');
    return this.family(family).save('filter');
  }

  async restoreFilter(family: IpFamily, text: string): Promise<void> {
    this.enter('restoreFilter');
    this.writes.push({ op: 'restoreFilter', family, text });
    this.tool(`ip${family === 6 ? '6' : ''}tables-restore --noflush`, text, () => this.family(family).restore(text, { noflush: true }));
  }

  async ipsetSave(): Promise<string> {
    this.enter('ipsetSave');
    return this.ipset.save();
  }

  async ipsetRestore(text: string): Promise<void> {
    this.enter('ipsetRestore');
    this.writes.push({ op: 'ipsetRestore', text });
    this.tool('ipset -exist restore', text, () => this.ipset.restore(text));
  }

  /** The next call of `op` throws `error` (default: a tool failure) and changes nothing. */
  failNext(op: FakeOp, error: Error = new DataplaneCommandError(op, 1, 'injected failure', undefined, [])): void {
    this.faults.push({ op, error });
  }

  /**
   * The kernel keeps a reference to set `name` after the last rule using it is gone (iptables-nft releases
   * it asynchronously): destroying it fails "in use" until `releaseSet`.
   */
  holdSet(name: string): void {
    this.held.add(name);
  }

  releaseSet(name: string): void {
    this.held.delete(name);
  }

  /** Someone else's `iptables-restore --noflush` (kube-proxy, an operator): not recorded as our write. */
  foreignIptables(family: IpFamily, text: string): void {
    this.family(family).restore(text, { noflush: true });
  }

  /** Someone else's `ipset restore`. */
  foreignIpset(text: string): void {
    this.ipset.restore(text);
  }

  /** `iptables-save -t <table>` as a foreign reader would see it. */
  save(family: IpFamily, table = 'filter'): string {
    return this.family(family).save(table);
  }

  private family(family: IpFamily): FakeIptables {
    const t = this.iptables.get(family);
    if (!t) throw new Error(`IPv${family} is not available (ip6tables missing or disabled)`);
    return t;
  }

  private enter(op: FakeOp): void {
    this.calls.push(op);
    const at = this.faults.findIndex((f) => f.op === op);
    if (at >= 0) throw this.faults.splice(at, 1)[0]!.error;
  }

  /** Runs a fake tool and reports its failure as the real runner does (DataplaneCommandError with the line). */
  private tool(command: string, input: string, apply: () => void): void {
    try {
      apply();
    } catch (err) {
      if (!(err instanceof FakeRestoreError)) throw err;
      throw new DataplaneCommandError(command, 1, err.message, err.line, linesAround(input, err.line));
    }
  }
}
