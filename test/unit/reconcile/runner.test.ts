// BoundedFrequencyRunner on a fake clock, without root: an isolated change runs at once, bursts fold into
// one run a batch window after the last run started, the drift check runs on
// maxInterval with nothing changed, failures retry with a doubling, capped delay, and stop() stops.
// (STYLE rule 9: "batches bursts of informer events, retries failures, and runs a drift check on
// maxInterval even when nothing changed".)

import { BoundedFrequencyRunner, type RunReason } from '../../../src/reconcile/runner.js';
import { FakeClock } from '../../fakes/fake-clock.js';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function harness(outcomes: ('ok' | 'fail')[] = [], maxIntervalMs = 10_000) {
  const clock = new FakeClock();
  const runs: { reason: RunReason; at: number }[] = [];
  const runner = new BoundedFrequencyRunner(
    async (reason) => {
      runs.push({ reason, at: clock.now() });
      if (outcomes.shift() === 'fail') throw new Error('apply failed');
    },
    { batchWindowMs: 100, maxIntervalMs, retryBaseMs: 1_000, retryMaxMs: 4_000, clock },
  );
  /** Advances in steps so each run's promise settles and the runner re-arms before the next timer. */
  const advance = async (ms: number, step = 50): Promise<void> => {
    for (let t = 0; t < ms; t += step) {
      clock.advance(Math.min(step, ms - t));
      await settle();
    }
  };
  /** Fires what is due now (a zero-delay timer) without moving time. */
  const tick = async (): Promise<void> => {
    clock.advance(0);
    await settle();
  };
  return { clock, runs, runner, advance, tick };
}

describe('BoundedFrequencyRunner', () => {
  it('runs an isolated request at once, folding the requests of the same tick into that run', async () => {
    const { runs, runner, tick } = harness();
    runner.start();
    for (let i = 0; i < 5; i++) runner.request();
    expect(runs).toEqual([]);
    await tick();
    expect(runs).toEqual([{ reason: 'change', at: 0 }]);
    runner.stop();
  });

  it('folds requests within the batch window after a run started into one run at the end of the window', async () => {
    const { runs, runner, advance, tick } = harness();
    runner.start();
    runner.request();
    await tick();
    await advance(10, 10);
    runner.request();
    await advance(30, 10);
    runner.request();
    runner.request();
    await advance(59, 1);
    expect(runs).toEqual([{ reason: 'change', at: 0 }]);
    await advance(1, 1);
    expect(runs).toEqual([
      { reason: 'change', at: 0 },
      { reason: 'change', at: 100 },
    ]);
    // Quiet for longer than the window: the next request runs at once again.
    await advance(500);
    runner.request();
    await tick();
    expect(runs.at(-1)).toEqual({ reason: 'change', at: 600 });
    runner.stop();
  });

  it('runs the periodic drift check on maxInterval when nothing changed', async () => {
    const { runs, runner, advance } = harness();
    runner.start();
    await advance(20_000, 500);
    expect(runs).toEqual([
      { reason: 'periodic', at: 10_000 },
      { reason: 'periodic', at: 20_000 },
    ]);
    runner.stop();
  });

  it('a drift check due during retries serves as the retry', async () => {
    const { runs, runner, advance, tick } = harness(['fail', 'fail', 'fail', 'fail', 'ok']);
    runner.start();
    runner.request();
    await tick();
    await advance(20_000, 100);
    expect(runs.map((r) => `${r.reason}@${r.at}`)).toEqual([
      'change@0',
      'retry@1000',
      'retry@3000',
      'retry@7000',
      'periodic@10000',
      'periodic@20000',
    ]);
    runner.stop();
  });

  it('retries a failed run with a doubling delay, capped, then returns to the drift period', async () => {
    const { runs, runner, advance, tick } = harness(['fail', 'fail', 'fail', 'fail', 'ok'], 60_000);
    runner.start();
    runner.request();
    await tick();
    await advance(72_000, 100);
    // Delays 1 s, 2 s, 4 s, then capped at 4 s; the drift check keeps its own schedule (due 60 s after start).
    expect(runs.map((r) => `${r.reason}@${r.at}`)).toEqual([
      'change@0',
      'retry@1000',
      'retry@3000',
      'retry@7000',
      'retry@11000',
      'periodic@60000',
    ]);
    runner.stop();
  });

  it('a success resets the backoff: a failure after it is retried after the base delay, not the last one', async () => {
    const { runs, runner, advance, tick } = harness(['fail', 'fail', 'fail', 'ok', 'fail', 'ok'], 60_000);
    runner.start();
    runner.request();
    await tick();
    await advance(8_000, 100);
    // Three failures (retried after 1 s, 2 s), then the third retry succeeds at 7 s.
    expect(runs.map((r) => `${r.reason}@${r.at}`)).toEqual(['change@0', 'retry@1000', 'retry@3000', 'retry@7000']);
    // A new change fails: the first failure since the success, retried after 1 s again.
    runner.request();
    await tick();
    await advance(5_000, 100);
    expect(runs.slice(4).map((r) => `${r.reason}@${r.at}`)).toEqual(['change@8000', 'retry@9000']);
    runner.stop();
  });

  it('a request during a run is served by one more run after it', async () => {
    const { clock, runs, runner, advance } = harness();
    let release: () => void = () => undefined;
    const slow = new BoundedFrequencyRunner(
      (reason) => {
        runs.push({ reason, at: clock.now() });
        return runs.length === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve();
      },
      { batchWindowMs: 100, maxIntervalMs: 10_000, retryBaseMs: 1_000, retryMaxMs: 4_000, clock },
    );
    runner.stop();
    slow.start();
    slow.request();
    await advance(100);
    slow.request();
    slow.request();
    await advance(500);
    expect(runs).toHaveLength(1);
    release();
    await settle();
    await advance(100);
    expect(runs.map((r) => r.reason)).toEqual(['change', 'change']);
    slow.stop();
  });

  it('requestFull runs a kernel-reading sync at once; stop() ends all runs', async () => {
    const { runs, runner, advance } = harness();
    runner.start();
    runner.requestFull();
    await advance(1, 1);
    expect(runs).toEqual([{ reason: 'periodic', at: 1 }]);
    runner.stop();
    runner.request();
    await advance(30_000, 1_000);
    expect(runs).toHaveLength(1);
  });

  describe('with preparePeriodic (the drift check reads the kernel first)', () => {
    function prepared() {
      const clock = new FakeClock();
      const runs: { reason: RunReason; at: number }[] = [];
      const preparations: (() => void)[] = [];
      const runner = new BoundedFrequencyRunner(
        (reason) => {
          runs.push({ reason, at: clock.now() });
          return Promise.resolve();
        },
        {
          batchWindowMs: 100,
          maxIntervalMs: 10_000,
          retryBaseMs: 1_000,
          retryMaxMs: 4_000,
          clock,
          preparePeriodic: () => new Promise<void>((resolve) => preparations.push(resolve)),
        },
      );
      const advance = async (ms: number): Promise<void> => {
        clock.advance(ms);
        await settle();
      };
      return { runs, runner, preparations, advance };
    }

    it('a change during the preparation runs at once; the periodic run follows when the preparation is done', async () => {
      const { runs, runner, preparations, advance } = prepared();
      runner.start();
      await advance(10_000);
      expect(preparations).toHaveLength(1);
      expect(runs).toEqual([]);
      runner.request();
      await advance(0);
      expect(runs).toEqual([{ reason: 'change', at: 10_000 }]);
      await advance(300);
      preparations[0]!();
      await settle();
      expect(runs).toEqual([
        { reason: 'change', at: 10_000 },
        { reason: 'periodic', at: 10_300 },
      ]);
      // One preparation per periodic run, and the next drift check is due a period after this one.
      await advance(9_999);
      expect(preparations).toHaveLength(1);
      await advance(1);
      expect(preparations).toHaveLength(2);
      runner.stop();
    });

    it('requestFull during the preparation gets one more periodic run after it (that read may predate the cause)', async () => {
      const { runs, runner, preparations, advance } = prepared();
      runner.start();
      await advance(10_000);
      runner.requestFull();
      preparations[0]!();
      await settle();
      expect(runs.map((r) => r.reason)).toEqual(['periodic']);
      await advance(0);
      expect(preparations).toHaveLength(2);
      preparations[1]!();
      await settle();
      expect(runs.map((r) => r.reason)).toEqual(['periodic', 'periodic']);
      runner.stop();
    });
  });
});
