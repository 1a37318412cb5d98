// SHA-256 of text, the one hash netfence computes: rule identities (render), the drift check's fingerprints
// (reconcile), chain and set names (compile), Event names (cluster). Node 24 hashes a string in one call,
// without a Hash object per rule.

import { hash } from 'node:crypto';

export const sha256 = (text: string, encoding: 'base64' | 'base64url' | 'hex'): string => hash('sha256', text, encoding);

/** The 32 bytes, for an encoding of the caller's own (the base32 of chain and set names). */
export const sha256Bytes = (text: string): Buffer => hash('sha256', text, 'buffer');
