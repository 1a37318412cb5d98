// One reader of this node's settings for the daemon and the one-shot commands (config/node-settings.ts):
// flannel's lease read once, the Node's podCIDRs winning when they arrive, and the warning when no source
// names a pod CIDR, given once per change, including at the start.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../../src/config/load.js';
import { NO_POD_CIDR, nodeSettingsOnce, nodeSettingsSource, settingsPerNode } from '../../../src/config/node-settings.js';
import type { ClusterSnapshot } from '../../../src/model/index.js';

const snapshot = (podCidrs: string[] = []): ClusterSnapshot =>
  ({
    nodes: podCidrs.length > 0 ? [{ name: 'n1', podCidrs } as unknown as ClusterSnapshot['nodes'][number]] : [],
    namespaces: [],
    pods: [],
    policies: [],
  }) as unknown as ClusterSnapshot;

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'netfence-node-settings-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const configWith = (lease: string | undefined) => {
  const file = join(dir, 'subnet.env');
  if (lease !== undefined) writeFileSync(file, lease);
  return loadConfig({ env: { NODE_NAME: 'n1', NETFENCE_FLANNEL_SUBNET_ENV: file } }).config;
};

const recorder = () => {
  const said: string[] = [];
  return {
    said,
    log: {
      warn: (m: string, f?: Record<string, unknown>) => said.push(`warn ${m} ${JSON.stringify(f)}`),
      info: (m: string, f?: Record<string, unknown>) => said.push(`info ${m} ${JSON.stringify(f)}`),
    },
  };
};

describe('node settings', () => {
  it("takes flannel's lease, then the Node's podCIDRs once they arrive, saying so on each change only", async () => {
    const { said, log } = recorder();
    const source = await nodeSettingsSource(configWith('FLANNEL_SUBNET=10.244.1.1/24\n'), log);
    expect(source.last()).toBeUndefined();
    expect(source.settings(snapshot()).podCidrs).toEqual(['10.244.1.0/24']);
    expect(source.settings(snapshot()).podCidrs).toEqual(['10.244.1.0/24']);
    expect(source.settings(snapshot(['10.9.0.0/24'])).podCidrs).toEqual(['10.9.0.0/24']);
    expect(source.last()?.podCidrs).toEqual(['10.9.0.0/24']);
    expect(said).toEqual([
      'info pod CIDRs of this node {"podCidrs":["10.244.1.0/24"]}',
      'info pod CIDRs of this node {"podCidrs":["10.9.0.0/24"]}',
    ]);
  });

  it('warns when no source names a pod CIDR, from the first compile on, once', async () => {
    const { said, log } = recorder();
    const source = await nodeSettingsSource(configWith(undefined), log);
    expect(source.settings(snapshot()).podCidrs).toEqual([]);
    expect(source.settings(snapshot()).podCidrs).toEqual([]);
    expect(said).toEqual([`warn ${NO_POD_CIDR} {"node":"n1"}`]);
  });

  it('an unreadable lease is no lease', async () => {
    const { said, log } = recorder();
    const settings = await nodeSettingsOnce(configWith('FLANNEL_SUBNET=not-a-cidr\n'), snapshot(), log);
    expect(settings.podCidrs).toEqual([]);
    expect(said).toEqual([`warn ${NO_POD_CIDR} {"node":"n1"}`]);
  });

  it('a one-shot command without a log only reads', async () => {
    const settings = await nodeSettingsOnce(configWith('FLANNEL_SUBNET=10.244.1.1/24\n'), snapshot());
    expect(settings.podCidrs).toEqual(['10.244.1.0/24']);
  });

  it("why and map: each node takes its own Node's podCIDRs, not this command's --pod-cidr", () => {
    const config = loadConfig({ env: { NODE_NAME: 'n1', NETFENCE_POD_CIDRS: '10.1.0.0/24' } }).config;
    const cluster = {
      ...snapshot(),
      nodes: [
        { name: 'a', podCidrs: ['10.2.0.0/24'] },
        { name: 'b', podCidrs: ['10.3.0.0/24'] },
      ],
    } as unknown as ClusterSnapshot;
    const settingsFor = settingsPerNode(config, cluster);
    expect([settingsFor('a').nodeName, settingsFor('a').podCidrs]).toEqual(['a', ['10.2.0.0/24']]);
    expect(settingsFor('b').podCidrs).toEqual(['10.3.0.0/24']);
    expect(settingsFor('a')).toBe(settingsFor('a'));
  });
});
