// Mark bits netfence owns, allocated inside the configured mask the way Felix allocates its
// `IptablesMarkMask`: lowest bit first, in a fixed order (accept, pass, scratch0, scratch1).

import type { MarkBits } from '../model/index.js';

/** kube-proxy marks packets for masquerade (0x4000) and drop (0x8000); sharing them breaks both. */
export const KUBE_PROXY_MARKS = 0x0000c000;

/** accept, pass (reserved, as in Felix), scratch0, scratch1. */
export const MARK_BITS_NEEDED = 4;

export const DEFAULT_MARK_MASK = 0xffff0000;

/** Why `mask` cannot be used, or an empty list. */
export function markMaskProblems(mask: number): string[] {
  if (!Number.isInteger(mask) || mask < 0 || mask > 0xffffffff) return ['must be a 32-bit unsigned integer'];
  const problems: string[] = [];
  const bits = setBits(mask).length;
  if (bits < MARK_BITS_NEEDED) {
    problems.push(`must have at least ${MARK_BITS_NEEDED} bits set (has ${bits}): accept, pass and two scratch bits`);
  }
  if ((mask & KUBE_PROXY_MARKS) !== 0) {
    problems.push(`must not overlap kube-proxy's mark bits ${hex(KUBE_PROXY_MARKS)} (overlap ${hex((mask & KUBE_PROXY_MARKS) >>> 0)})`);
  }
  return problems;
}

/**
 * Allocates the bits inside `mask`, lowest first. For Felix's default 0xffff0000 this gives accept
 * 0x10000, pass 0x20000, scratch0 0x40000, scratch1 0x80000 and all = 0xf0000 (model DEFAULT_MARKS).
 * Throws when `mask` is unusable; the config loader reports `markMaskProblems` before this runs.
 */
export function allocateMarks(mask: number): MarkBits {
  const problems = markMaskProblems(mask);
  if (problems.length > 0) throw new Error(`mark mask ${hex(mask)} ${problems.join('; ')}`);
  const [accept = 0, pass = 0, scratch0 = 0, scratch1 = 0] = setBits(mask);
  return { accept, pass, scratch0, all: accept + pass + scratch0 + scratch1 };
}

/**
 * Strict mode's conntrack-mark bit: the fifth bit of `mask` (0x100000 for 0xffff0000), after the four
 * packet-mark bits. It is a ctmark bit, not a packet-mark bit, but it stays inside the mask the operator
 * gave netfence, so a tool that copies marks between packet and flow (CONNMARK --save/--restore-mark)
 * with its own bits cannot collide with it. Undefined when the mask has only four bits.
 */
export function revokeBit(mask: number): number | undefined {
  return setBits(mask)[MARK_BITS_NEEDED];
}

/** Accepts a number or a `0x…` / decimal string; undefined when it is neither. */
export function parseMarkMask(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return undefined;
  if (/^0x[0-9a-f]{1,8}$/i.test(value)) return Number.parseInt(value.slice(2), 16);
  if (/^\d{1,10}$/.test(value)) return Number(value);
  return undefined;
}

export const hex = (n: number): string => `0x${(n >>> 0).toString(16)}`;

// Values of the set bits, lowest first. `2 ** i` rather than `1 << i`: bit 31 must stay positive.
function setBits(mask: number): number[] {
  const bits: number[] = [];
  for (let i = 0; i < 32; i++) {
    const bit = 2 ** i;
    if (Math.floor(mask / bit) % 2 === 1) bits.push(bit);
  }
  return bits;
}
