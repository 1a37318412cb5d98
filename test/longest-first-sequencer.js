// Orders the test files for `npm test`'s two workers, longest first, so neither worker is left running a
// long file alone at the end: the conformance suites (minutes each), then the other kernel files, then unit
// and golden (seconds each), which fill the gaps. Within each group jest's own order is kept (files that
// failed last time first, then by the duration jest recorded, then by size).
import Sequencer from '@jest/test-sequencer';

const rank = (test) => {
  if (test.path.includes('/test/kernel/conformance/')) return 0;
  if (test.path.includes('/test/kernel/')) return 1;
  return 2;
};

export default class LongestFirstSequencer extends Sequencer {
  async sort(tests) {
    const sorted = await super.sort(tests);
    const order = new Map(sorted.map((t, i) => [t, i]));
    return [...sorted].sort((a, b) => rank(a) - rank(b) || order.get(a) - order.get(b));
  }
}
