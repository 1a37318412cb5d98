// SHA-256 of text, the one hash netfence computes: rule identities (render), the drift check's fingerprints
// (reconcile), chain and set names (compile), Event names (cluster). Node 24 hashes a string in one call,
// without a Hash object per rule.

import { hash } from 'node:crypto';

export const sha256 = (text: string, encoding: 'base64' | 'base64url' | 'hex'): string => hash('sha256', text, encoding);

/**
 * The 32 bytes as a string of 32 char codes (0–255), for an encoding of the caller's own (the base32 of chain
 * and set names): a string comes back some three times faster than a Buffer, which is allocated per call.
 */
export const sha256Binary = (text: string): string => hash('sha256', text, 'binary');
