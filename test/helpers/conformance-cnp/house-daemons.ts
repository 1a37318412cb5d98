// The house cluster served by a fake API server (with the ClusterNetworkPolicy CRD) to one running netfence
// daemon per sandbox node, as upstream's suite runs against a live implementation: publish() turns the
// HouseCluster's desired state into the creates, updates and deletes kubectl would make, and the daemons
// pick them up through their watches. publishAndWait() then waits until every node's kernel holds exactly what
// `netfence diff` computes for that state, so a probe never passes on the state before the change.

import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { FakeApiServer, type KubeObject } from '../../fakes/fake-apiserver.js';
import { startNodeDaemon, waitReady, type NodeDaemon } from '../daemon-harness.js';
import type { HouseCluster } from './houses.js';

const keyOf = (o: KubeObject): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export class HouseDaemons {
  private published = new Map<string, string>();
  /** Whether the nodes were found in sync with `published`. */
  private verified = false;

  private constructor(
    private readonly cluster: HouseCluster,
    private readonly server: FakeApiServer,
    private readonly daemons: readonly NodeDaemon[],
    private readonly dir: string,
  ) {}

  /** Serves the cluster's current state, then starts a daemon per node and waits until both are ready. */
  static async start(cluster: HouseCluster): Promise<HouseDaemons> {
    const dir = mkdtempSync(join(tmpdir(), 'nft-cnp-daemons-'));
    const server = new FakeApiServer({ clusterNetworkPolicyCrd: true });
    const daemons: NodeDaemon[] = [];
    const started = new HouseDaemons(cluster, server, daemons, dir);
    try {
      await server.start();
      started.publish();
      const kubeconfig = server.writeKubeconfig(dir);
      for (const node of cluster.sandbox.nodes())
        daemons.push(await startNodeDaemon(node, { kubeconfig }, { 'batch-window-ms': '10', 'pod-cidr': cluster.podCidrs(node.name) }));
      await Promise.all(daemons.map((d) => waitReady(d)));
      return started;
    } catch (err) {
      await started.stop();
      throw err;
    }
  }

  /** kubectl apply of every object that changed, delete of every object that is gone; whether there was any. */
  private publish(): boolean {
    let changed = false;
    const next = new Map((this.cluster.objects() as KubeObject[]).map((o) => [keyOf(o), o] as const));
    for (const [key, obj] of this.published) {
      if (!next.has(key)) {
        this.server.delete(JSON.parse(obj) as KubeObject);
        changed = true;
      }
    }
    const written = new Map<string, string>();
    for (const [key, obj] of next) {
      const text = JSON.stringify(obj);
      if (this.published.get(key) !== text) {
        this.server.apply(obj);
        changed = true;
      }
      written.set(key, text);
    }
    this.published = written;
    return changed;
  }

  /**
   * publish(), then waits until `netfence diff` finds every node in sync with it (exit 0) or `deadline`
   * passes; returns what still differs then, or undefined. Nothing published since the last time the nodes
   * were found in sync: nothing to wait for.
   */
  async publishAndWait(deadline: number): Promise<string | undefined> {
    if (this.publish()) this.verified = false;
    if (this.verified) return undefined;
    const stale = await this.waitInSync(deadline);
    this.verified = stale === undefined;
    return stale;
  }

  private async waitInSync(deadline: number): Promise<string | undefined> {
    const file = join(this.dir, 'published.json');
    writeFileSync(
      `${file}.tmp`,
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...this.published.values()].map((o) => JSON.parse(o) as unknown) }),
    );
    renameSync(`${file}.tmp`, file);
    for (;;) {
      // A daemon takes ~100 ms or more to program a change: a diff at once would only race it for the CPU.
      await new Promise((r) => setTimeout(r, 150));
      const reports = await Promise.all(
        this.cluster.sandbox.nodes().map(async (node) => {
          let out = '';
          const io = { out: (t: string) => (out += t), err: (t: string) => (out += t) };
          const code = await main(
            [
              'diff',
              '--netns',
              node.netns,
              '--node-name',
              node.name,
              ...this.cluster.podCidrs(node.name).flatMap((c) => ['--pod-cidr', c]),
              '--log-level',
              'error',
              '--resources',
              file,
            ],
            io,
          );
          return code === 0 ? undefined : `[${node.name}] diff exited ${code}:\n${out}`;
        }),
      );
      const differs = reports.filter((r): r is string => r !== undefined);
      if (differs.length === 0) return undefined;
      if (Date.now() >= deadline) return differs.join('\n');
    }
  }

  /** The daemons' last log lines, for failure messages. */
  logs(lines = 15): string {
    return this.daemons.map((d) => `--- ${d.node.name}\n${d.logs.slice(-lines).join('\n')}`).join('\n');
  }

  async stop(): Promise<void> {
    try {
      await Promise.all(this.daemons.map((d) => d.stop().catch(() => undefined)));
      await this.server.stop();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}
