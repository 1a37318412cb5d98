// Removing the anti-spoofing table (`netfence cleanup`) through the two nft calls it needs, so the
// family and name it looks under are the ones render.ts writes, checked without root.

import { ANTISPOOF_FAMILY, ANTISPOOF_TABLE, renderAntiSpoofDelete } from './render.js';

export interface NftTableTools {
  /** `nft -j list table <family> <table>`; undefined when there is no such table. */
  list(family: string, table: string): Promise<string | undefined>;
  /** `nft -f -`: one atomic script. */
  apply(script: string): Promise<void>;
}

/** Removes the table where renderAntiSpoof puts it; false when there was none (not an error). */
export async function removeAntiSpoofTable(nft: NftTableTools): Promise<boolean> {
  if ((await nft.list(ANTISPOOF_FAMILY, ANTISPOOF_TABLE)) === undefined) return false;
  await nft.apply(renderAntiSpoofDelete());
  return true;
}
