// One kind's list-then-watch loop, without a cache of its own. client-node's ListWatch keeps every object it
// has seen (at 100,000 pods, ~29 MiB of heap beside the ObjectStore) only to diff a relist and skip repeated
// versions; the ObjectStore already knows every key, and skips a value equal to the one it holds. So this loop
// asks its owner for the keys it holds instead, and otherwise behaves as ListWatch does (client-node 1.4.0,
// dist/cache.js), which kube-source.ts's header relies on:
// - a watch that ends cleanly is reopened from the last resourceVersion seen (an event's or a bookmark's);
// - 410 Gone (an ERROR event, or the error a watch ends with) clears the resourceVersion: the next round relists,
//   and every key held that the new list lacks is removed, before the list's objects are applied;
// - any other failure is reported to `error` and the loop stays stopped until start() is called again, which
//   resumes the watch from the last resourceVersion (relisting only if there is none);
// - a list that fails rejects before anything is applied, so nothing is removed for objects it did not reach.

import type { KubernetesListObject, KubernetesObject, Watch } from '@kubernetes/client-node';

export interface InformerHandlers {
  /** An object was listed or watched (added or modified). */
  readonly upsert: (obj: KubernetesObject) => void;
  /** The object with this key is gone. */
  readonly remove: (key: string) => void;
  /** Every key the owner holds for this kind (a relist removes those missing from it). */
  readonly heldKeys: () => Iterable<string>;
  readonly keyOf: (obj: KubernetesObject) => string;
  /** A list or watch failed (not 410): the loop is stopped until start(). */
  readonly error: (err: unknown) => void;
  /** A round (list if needed, then watch) begins. */
  readonly connect: () => void;
}

/** Put in place of a list item once it is applied. */
const RELEASED: KubernetesObject = {};

type ListFn = () => Promise<KubernetesListObject<KubernetesObject>>;

export class KindInformer {
  private resourceVersion = '';
  private stopped = false;
  private request: AbortController | undefined;

  constructor(
    private readonly path: string,
    private readonly watcher: Pick<Watch, 'watch'>,
    private readonly list: ListFn,
    private readonly handlers: InformerHandlers,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    await this.round(null);
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.abort();
    return Promise.resolve();
  }

  private abort(): void {
    this.request?.abort();
    this.request = undefined;
  }

  /** Called at start and whenever a watch ends (`err` null when it ended cleanly). */
  private async round(err: unknown): Promise<void> {
    this.abort();
    if (isGone(err)) this.resourceVersion = '';
    else if (err) return this.handlers.error(err);
    if (this.stopped) return;
    this.handlers.connect();
    if (!this.resourceVersion) {
      let listed: KubernetesListObject<KubernetesObject>;
      try {
        listed = await this.list();
      } catch (listErr) {
        return this.handlers.error(listErr);
      }
      this.applyList(listed.items);
      this.resourceVersion = listed.metadata?.resourceVersion ?? '';
    }
    this.request = await this.watcher.watch(
      this.path,
      { resourceVersion: this.resourceVersion },
      (phase, obj) => this.onEvent(phase, obj as KubernetesObject),
      (watchErr) => void this.round(watchErr),
    );
  }

  private applyList(items: KubernetesObject[]): void {
    // Collected first: removing while the owner's key iterator runs could skip keys.
    const held = [...this.handlers.heldKeys()];
    // The first list (nothing held) needs no set of 100,000 keys.
    if (held.length > 0) {
      const listed = new Set<string>();
      for (const obj of items) listed.add(this.handlers.keyOf(obj));
      for (const key of held) if (!listed.has(key)) this.handlers.remove(key);
    }
    // Each object is let go once applied: a list of 100,000 pods held whole until the last is stored would
    // raise the peak by all of them (the store keeps its own converted copy).
    for (let i = 0; i < items.length; i++) {
      const obj = items[i]!;
      items[i] = RELEASED;
      this.handlers.upsert(obj);
    }
  }

  private onEvent(phase: string, obj: KubernetesObject): void {
    switch (phase) {
      case 'ERROR':
        if ((obj as { code?: unknown }).code === 410) this.resourceVersion = '';
        return; // the watch ends after it; round() decides what follows
      case 'ADDED':
      case 'MODIFIED':
        this.handlers.upsert(obj);
        break;
      case 'DELETED':
        this.handlers.remove(this.handlers.keyOf(obj));
        break;
      // BOOKMARK: only its resourceVersion matters.
    }
    this.resourceVersion = obj.metadata?.resourceVersion ?? '';
  }
}

function isGone(err: unknown): boolean {
  const e = err as { statusCode?: unknown; code?: unknown } | null | undefined;
  return e?.statusCode === 410 || e?.code === 410;
}
