// client-node's Watch as the informers use it, with what it lacks (kube-source.ts says why each matters):
// a watch that connects after stop() is aborted, connects are reported, each watch's life is bounded
// (server-side timeoutSeconds, then a client-side watchdog), objects are slimmed before the informer caches
// them, a line that is not an event ends the watch instead of being skipped, and so does a line longer than
// MAX_LINE_BYTES (line-splitter.ts).

import { Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { decodeWatchEvent, get } from './kube-list.js';
import { LineSplitter, LineTooLongError, MAX_LINE_BYTES } from './line-splitter.js';

/** How long after the requested server-side timeout we give up on a watch ourselves. */
const WATCH_GRACE_SECONDS = 30;

export interface WatchHooks {
  /** Keeps only what netfence reads, before the informer caches the object. */
  readonly slim: (obj: KubernetesObject) => KubernetesObject;
  readonly isStopped: () => boolean;
  readonly onWatchStart: () => void;
  readonly onConnected: () => void;
  readonly timeoutSeconds: () => number;
  /** A line of the watch stream was not an event; the watch ends and the informer relists. */
  readonly onDecodeError: (line: string) => void;
  /** A line passed MAX_LINE_BYTES; the watch ends and restarts with backoff. */
  readonly onLineTooLong: (err: LineTooLongError) => void;
  /** The field selector of the kind's list, which its watch must use too. */
  readonly fieldSelector: () => string | undefined;
}

/** client-node's Watch, plus: abort a watch that connects after stop(), report connects, and bound
 * each watch's life (server-side timeoutSeconds, then a client-side watchdog). */
export class GuardedWatch extends Watch {
  private lastDecodeError = -Infinity;

  constructor(
    config: KubeConfig,
    private readonly hooks: WatchHooks,
  ) {
    super(config);
  }

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    this.hooks.onWatchStart();
    const timeoutSeconds = this.hooks.timeoutSeconds();
    let failed = false;
    let watchdog: NodeJS.Timeout | undefined;
    const slimmed = (phase: string, apiObj: unknown, watchObj?: unknown): void =>
      callback(phase, phase === 'ERROR' || phase === 'BOOKMARK' ? apiObj : this.hooks.slim(apiObj as KubernetesObject), watchObj);
    // Bookmarks keep the informer's resourceVersion current while nothing it watches changes, so a watch
    // that ends resumes from a recent version instead of one the server has compacted away (410, then a
    // full relist of every pod: the most expensive request a node makes of the API server).
    const fieldSelector = this.hooks.fieldSelector();
    const query = { ...queryParams, timeoutSeconds, allowWatchBookmarks: true, ...(fieldSelector ? { fieldSelector } : {}) };
    const controller = await this.stream(path, query, slimmed, (err) => {
      clearTimeout(watchdog);
      failed ||= err !== null && err !== undefined;
      done(err);
    });
    if (this.hooks.isStopped()) controller.abort();
    else if (!failed) {
      this.hooks.onConnected();
      // Aborting makes watch.js report an error, and the informer is restarted with backoff.
      watchdog = setTimeout(() => controller.abort(), (timeoutSeconds + WATCH_GRACE_SECONDS) * 1000);
      watchdog.unref();
    }
    return controller;
  }

  /**
   * One watch request, read line by line. client-node's Watch.watch does the same but skips a line it
   * cannot parse, so a corrupted event was lost without a trace until the next relist. Here a line that is
   * not a watch event ends the watch as a 410 would: the informer relists at once (reconciling deletions)
   * and watches again from the fresh list.
   */
  private async stream(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    const controller = new AbortController();
    let finished = false;
    const finish = (err: unknown): void => {
      if (finished) return;
      finished = true;
      controller.abort();
      done(err);
    };
    try {
      // The same authenticated request as the lists (kube-list.ts); a refusal carries its statusCode (410: relist).
      const response = await get(this.config, path, { watch: true, ...queryParams }, controller.signal);
      const body = response.body;
      // Our own splitter, not readline: readline buffers a line without bound, and one that never ends
      // killed the daemon (RangeError: Invalid string length, thrown where nothing catches it).
      const lines = new LineSplitter(MAX_LINE_BYTES);
      const onLine = (line: string): void => {
        if (finished || line.trim() === '') return;
        const event = decodeWatchEvent(line);
        if (!event) {
          this.hooks.onDecodeError(line);
          // A stream that keeps breaking must not turn into a relist storm against the API server: a second
          // decode error within the window ends the watch as a plain failure, which restarts with backoff.
          const now = Date.now();
          const relist = now - this.lastDecodeError > DECODE_RELIST_WINDOW_MS;
          this.lastDecodeError = now;
          finish(new WatchDecodeError(line, relist));
          return;
        }
        callback(event.type, event.object, event);
      };
      body.on('data', (chunk: Buffer) => {
        if (finished) return;
        let complete: string[];
        try {
          complete = lines.push(chunk);
        } catch (err) {
          if (err instanceof LineTooLongError) this.hooks.onLineTooLong(err);
          finish(err);
          return;
        }
        for (const line of complete) onLine(line);
      });
      body.on('error', finish);
      body.on('end', () => {
        const last = lines.end();
        if (last !== undefined) onLine(last);
        finish(null);
      });
      body.on('close', () => finish(null));
    } catch (err) {
      finish(err);
    }
    return controller;
  }
}

/** Decode errors closer together than this back off instead of relisting again. */
const DECODE_RELIST_WINDOW_MS = 30_000;

/** A watch stream line that is not an event. With `relist` it carries 410, so the informer relists rather than resumes. */
export class WatchDecodeError extends Error {
  override readonly name = 'WatchDecodeError';
  readonly statusCode: number | undefined;
  constructor(line: string, relist: boolean) {
    super(
      `watch stream line is not an event (${relist ? 'relisting' : 'retrying with backoff'}): ${line.length > 200 ? `${line.slice(0, 200)}…` : line}`,
    );
    this.statusCode = relist ? 410 : undefined;
  }
}
