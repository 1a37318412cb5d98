// What the hostile-daemon tests share: the check that output shows no terminal control, and the drop record
// a daemon's /flows lists, which each case lays its hostile field over.

import { deniedFlow } from './denied-flow.js';

/** Characters a terminal acts on rather than shows: C0 but newline, DEL, C1, bidi embeddings/overrides and isolates. */
export const steersTerminal = (text: string): boolean =>
  [...text].some((c) => {
    const code = c.codePointAt(0)!;
    return (
      (code < 0x20 && code !== 0x0a) ||
      (code >= 0x7f && code <= 0x9f) ||
      (code >= 0x202a && code <= 0x202e) ||
      (code >= 0x2066 && code <= 0x2069)
    );
  });

/** One drop as a daemon's /flows lists it (dev/api → prod/db, TCP 80, isolated), with `over` laid on top. */
export const dropRecord = (over: Record<string, unknown> = {}) => ({
  seq: 1,
  ...deniedFlow({ because: 'prod/db is isolated for ingress' }),
  count: 1,
  lastSeen: Date.parse('2026-11-24T11:20:01Z'),
  ...over,
});
