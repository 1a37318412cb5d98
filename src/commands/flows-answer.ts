// The daemon's /flows answer as `netfence drops` reads it: a bounded body, JSON, and records of the shape
// the daemon writes. Whatever answers on the daemon's port is not trusted: an endless body, bad JSON or a
// record of the wrong shape is an error that says what was wrong and where, never a stack trace, and
// never a partly printed list.

import type { FlowRecord } from '../observe/flow-log.js';
import { MAX_LEARNED_SETS, type LearnedAnswer } from '../observe/learned-answer.js';
import { CommandFailure } from './errors.js';
import { terminalSafe } from './terminal-text.js';

/**
 * Largest /flows body read. The daemon's ring holds 1,000 records (DEFAULT_RING_CAPACITY) of about 0.4 KiB
 * with one selecting policy (a policy name adds at most ~320 bytes, listed once per selecting policy and
 * in the sentence), so 16 MiB fits a full ring whose pods have some 25 long-named policies each.
 */
export const MAX_FLOWS_BODY_BYTES = 16 * 1024 * 1024;

/** An answer that is not a usable /flows answer: the message says what and where (exit 2, no usage). */
export class FlowsAnswerError extends CommandFailure {
  override readonly name = 'FlowsAnswerError';
}

/** The body as text; refused as soon as it passes `limit` bytes (declared or received). */
export async function readBoundedBody(res: Response, url: string, limit = MAX_FLOWS_BODY_BYTES): Promise<string> {
  const tooLarge = (): FlowsAnswerError =>
    new FlowsAnswerError(
      `the answer from ${url} is larger than ${limit} bytes (the most netfence reads from a daemon); is that a netfence daemon?`,
    );
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > limit) {
    await res.body?.cancel();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Leaving the loop early (the throw) cancels the stream: the rest is never read.
  for await (const chunk of (res.body ?? []) as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

type Check = (value: unknown, where: string) => void;

const typeOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);
const fail = (where: string, expected: string, v: unknown): never => {
  throw new FlowsAnswerError(`${where}: expected ${expected}, got ${typeOf(v)}`);
};
const isString: Check = (v, where) => void (typeof v === 'string' || fail(where, 'a string', v));
const isCount: Check = (v, where) =>
  void (Number.isSafeInteger(v) && (v as number) >= 0 ? undefined : fail(where, 'a whole number ≥ 0', v));
// new Date() of a time past ±8.64e15 ms is Invalid Date, and printing it threw a RangeError.
const isTime: Check = (v, where) =>
  void (typeof v === 'number' && Number.isFinite(new Date(v).getTime()) ? undefined : fail(where, 'a time in ms since 1970', v));
const isPort: Check = (v, where) =>
  void (Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 65535 ? undefined : fail(where, 'a port 0-65535', v));
const isByte: Check = (v, where) =>
  void (Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 255 ? undefined : fail(where, 'a number 0-255', v));
const optional =
  (check: Check): Check =>
  (v, where) =>
    v === undefined ? undefined : check(v, where);
const isObject = (fields: Readonly<Record<string, Check>>): Check => {
  return (v, where) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return fail(where, 'an object', v);
    for (const [name, check] of Object.entries(fields)) check((v as Record<string, unknown>)[name], `${where}.${name}`);
  };
};
const isArrayOf =
  (check: Check): Check =>
  (v, where) => {
    if (!Array.isArray(v)) return fail(where, 'an array', v);
    v.forEach((item, i) => check(item, `${where}[${i}]`));
  };

const isEnd = isObject({ ip: isString, pod: optional(isString), where: optional(isString) });

/** Every field `netfence drops` prints or follows by, as FlowRecord declares it. */
const isRecord = isObject({
  seq: isCount,
  time: isTime,
  src: isEnd,
  dst: isEnd,
  protocol: isString,
  port: optional(isPort),
  icmp: optional(isObject({ type: isByte, code: isByte, id: optional(isPort) })),
  direction: isString,
  reason: isString,
  pod: optional(isString),
  policies: isArrayOf(isString),
  because: isString,
  count: isCount,
  lastSeen: optional(isTime),
});

/**
 * A daemon's JSON answer checked by `check`: errors name the URL and the field, a `{ "error": ... }` answer is
 * the daemon's refusal, and `what` names the answer expected (`a flow list`).
 */
function parseAnswer(body: string, url: string, check: Check, what: string): unknown {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (err) {
    // V8's message quotes the text around the error: the answer's own characters, so made safe.
    throw new FlowsAnswerError(`the answer from ${url} is not JSON (${terminalSafe((err as Error).message)})`);
  }
  const refusal = (doc as { error?: unknown } | null)?.error;
  if (typeof refusal === 'string')
    throw new FlowsAnswerError(`the daemon at ${url} refused the query: ${terminalSafe(refusal.slice(0, 300))}`);
  try {
    check(doc, 'answer');
  } catch (err) {
    if (err instanceof FlowsAnswerError) throw new FlowsAnswerError(`the answer from ${url} is not ${what}: ${err.message}`);
    throw err;
  }
  return doc;
}

/** `{ "records": [...] }` from the daemon, checked record by record; errors name the URL and the field. */
export function parseFlowsAnswer(body: string, url: string): FlowRecord[] {
  return (parseAnswer(body, url, isObject({ records: isArrayOf(isRecord) }), 'a flow list') as { records: FlowRecord[] }).records;
}

// Seconds since 1970 that print as a date (learnedAt), and a timeout no ipset holds past (2^31 - 1 s).
const isEpochSeconds: Check = (v, where) =>
  void (Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= 8.64e12 ? undefined : fail(where, 'seconds since 1970', v));
const isTimeout: Check = (v, where) =>
  void (Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= 2 ** 31 - 1 ? undefined : fail(where, 'a timeout in seconds', v));
// Short of Date's limit (8.64e15 ms) by more than any timeout, so `readAt + remainingSeconds` prints as a date.
const isReadAt: Check = (v, where) =>
  void (Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= 8e15 ? undefined : fail(where, 'a time in ms since 1970', v));
const isShortList =
  (check: Check, most: number): Check =>
  (v, where) => {
    if (Array.isArray(v) && v.length > most) fail(where, `at most ${most} entries`, `${v.length}`);
    isArrayOf(check)(v, where);
  };

const isLearnedAnswer = isObject({
  pod: isString,
  address: isString,
  readAt: isReadAt,
  sets: isCount,
  names: isShortList(isString, 1024),
  learned: isShortList(
    isObject({
      set: isString,
      policy: isString,
      rule: isString,
      name: optional(isString),
      learnedAt: optional(isEpochSeconds),
      remainingSeconds: optional(isTimeout),
    }),
    MAX_LEARNED_SETS,
  ),
});

/** The daemon's `/learned` answer, checked as /flows answers are; errors name where and what was wrong. */
export function parseLearnedAnswer(body: string, url: string): LearnedAnswer {
  return parseAnswer(body, url, isLearnedAnswer, 'a learned-set answer') as LearnedAnswer;
}

/** The records the daemon at `url` answered; errors say what was wrong with the answer and where. */
export async function fetchFlows(url: string): Promise<FlowRecord[]> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  } catch (err) {
    throw new CommandFailure(
      `cannot reach the netfence daemon at ${new URL(url).origin} (${describeCause(err)}); is it running on this node? (--url)`,
    );
  }
  const body = await readBoundedBody(res, url);
  if (res.status !== 200) {
    // Enough of the answer to say why (the daemon's are one line), never the whole of a hostile one.
    const said = terminalSafe(body.trim().slice(0, 300));
    throw new FlowsAnswerError(`the daemon at ${url} answered ${res.status}: ${said}`);
  }
  return parseFlowsAnswer(body, url);
}

/** fetch's own message is "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND) is its cause. */
function describeCause(err: unknown): string {
  // Not `instanceof Error`: the cause may come from another realm.
  const e = err as { message?: unknown; cause?: { name?: unknown; message?: unknown } };
  return typeof e.cause?.message === 'string' ? `${String(e.cause.name ?? 'Error')}: ${e.cause.message}` : String(e.message ?? err);
}
