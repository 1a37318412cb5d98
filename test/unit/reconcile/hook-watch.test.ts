import type { IpFamily } from '../../../src/model/index.js';
import { HookWatch } from '../../../src/reconcile/hook-watch.js';
import type { Clock } from '../../../src/reconcile/runner.js';
import { parseRuleLine } from '../../../src/render/index.js';

const OURS = '-A FORWARD -m comment --comment "nf:abc netfence policy" -j nf-FORWARD';
const KUBE = '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD';

/** A clock whose timers run only when the test says. */
function manualClock() {
  let now = 0;
  const timers: { at: number; fn: () => void }[] = [];
  const clock: Clock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const t = { at: now + ms, fn };
      timers.push(t);
      return t;
    },
    clearTimeout: (h) => {
      const i = timers.indexOf(h as (typeof timers)[number]);
      if (i >= 0) timers.splice(i, 1);
    },
  };
  const advance = async (ms: number) => {
    now += ms;
    for (const t of timers.filter((x) => x.at <= now)) {
      timers.splice(timers.indexOf(t), 1);
      t.fn();
    }
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  return { clock, advance, pending: () => timers.length };
}

function setup(heads: (string | undefined)[], intervalMs = 1000) {
  const calls: { family: IpFamily; chain: string; found: string | undefined; firstSeen: boolean }[] = [];
  const reads: string[] = [];
  const { clock, advance, pending } = manualClock();
  const watch = new HookWatch({
    firstRule: async (family, chain) => {
      reads.push(`${family} ${chain}`);
      return heads.length > 1 ? heads.shift() : heads[0];
    },
    expected: () => [{ family: 4, chain: 'FORWARD', rule: parseRuleLine(OURS)!.rule }],
    onDisplaced: (info) => calls.push(info),
    intervalMs,
    clock,
  });
  return { watch, calls, reads, advance, pending };
}

describe('HookWatch', () => {
  it('reads only the first rule of the hooked chain, and says nothing while ours is first', async () => {
    const { watch, calls, reads, advance } = setup([OURS]);
    watch.start();
    await advance(1000);
    await advance(1000);
    expect(reads).toEqual(['4 FORWARD', '4 FORWARD']);
    expect(calls).toEqual([]);
  });

  it('reports a displaced jump on every tick until it is first again, firstSeen only on the first', async () => {
    const { watch, calls, advance } = setup([OURS, KUBE, KUBE, OURS, KUBE]);
    watch.start();
    for (let i = 0; i < 5; i++) await advance(1000);
    expect(calls.map((c) => [c.found, c.firstSeen])).toEqual([
      [KUBE, true],
      [KUBE, false],
      [KUBE, true],
    ]);
  });

  it('treats an empty chain as displaced (someone flushed FORWARD)', async () => {
    const { watch, calls } = setup([undefined]);
    await watch.check();
    expect(calls).toEqual([{ family: 4, chain: 'FORWARD', found: undefined, firstSeen: true }]);
  });

  it('does nothing when the interval is 0, and stops arming after stop()', async () => {
    const off = setup([KUBE], 0);
    off.watch.start();
    expect(off.pending()).toBe(0);
    const on = setup([OURS]);
    on.watch.start();
    expect(on.pending()).toBe(1);
    on.watch.stop();
    expect(on.pending()).toBe(0);
  });
});
