import { describe, expect, it } from '@jest/globals';
import { EventLatency } from '../../../src/observe/event-latency.js';

/** An EventLatency on a hand-moved clock, and what it observed (in ms). */
function setup(): { latency: EventLatency; at: (ms: number) => void; observed: number[] } {
  let now = 0;
  const observed: number[] = [];
  const latency = new EventLatency(
    (s) => observed.push(Math.round(s * 1000)),
    () => now,
  );
  return { latency, at: (ms) => (now = ms), observed };
}

describe('EventLatency: one observation per sync, from the earliest event it included', () => {
  it('events before the first sync are start-up, not latency', () => {
    const { latency, at, observed } = setup();
    latency.eventSeen();
    at(500);
    latency.programmed(0.5);
    expect(observed).toEqual([]);
  });

  it('a burst before a sync: measured from its first event', () => {
    const { latency, at, observed } = setup();
    latency.programmed(0);
    at(100);
    latency.eventSeen();
    at(110);
    latency.eventSeen();
    at(200); // the sync ran 120..200
    latency.programmed(0.08);
    expect(observed).toEqual([100]);
  });

  it('an event that arrives while a sync runs is measured by the next sync, from its own arrival', () => {
    const { latency, at, observed } = setup();
    latency.programmed(0);
    at(100);
    latency.eventSeen(); // included in the sync 100..150
    at(120);
    latency.eventSeen(); // arrives during it: the snapshot was read at 100
    at(150);
    latency.programmed(0.05);
    at(200); // the next sync, 150..200, programs it
    latency.programmed(0.05);
    expect(observed).toEqual([50, 80]);
  });

  it('a sync with nothing pending observes nothing', () => {
    const { latency, at, observed } = setup();
    latency.programmed(0);
    at(1000);
    latency.programmed(0.1); // the periodic drift check
    expect(observed).toEqual([]);
  });
});
