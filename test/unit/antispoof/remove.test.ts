// `netfence cleanup` removes the anti-spoofing table where the daemon writes it (renderAntiSpoof's own
// `table <family> <name>`), and treats a missing table as nothing to do.

import { removeAntiSpoofTable, type NftTableTools } from '../../../src/antispoof/remove.js';
import { renderAntiSpoof } from '../../../src/antispoof/render.js';

/** nft's tables by `family name`, created and deleted by the `table …` / `delete table …` lines of a script. */
function fakeNft(): NftTableTools & { readonly tables: Set<string> } {
  const tables = new Set<string>();
  return {
    tables,
    list: async (family, name) => (tables.has(`${family} ${name}`) ? '{"nftables": []}' : undefined),
    apply: async (script) => {
      for (const line of script.split('\n')) {
        const del = /^delete table (\S+) (\S+)$/.exec(line);
        const add = /^table (\S+) (\S+)/.exec(line);
        if (del) tables.delete(`${del[1]} ${del[2]}`);
        else if (add) tables.add(`${add[1]} ${add[2]}`);
      }
    },
  };
}

describe('removing the anti-spoofing table', () => {
  it('finds and removes the table the daemon programmed', async () => {
    const nft = fakeNft();
    await nft.apply(renderAntiSpoof({ bridge: 'cni0', bindings: [], unknownPorts: [], otherPorts: [], conflicts: [] }));
    expect(nft.tables.size).toBe(1);
    expect(await removeAntiSpoofTable(nft)).toBe(true);
    expect([...nft.tables]).toEqual([]);
  });

  it('reports no table, and writes nothing, when there is none', async () => {
    const nft = fakeNft();
    const applied: string[] = [];
    expect(await removeAntiSpoofTable({ ...nft, apply: async (s) => void applied.push(s) })).toBe(false);
    expect(applied).toEqual([]);
  });
});
