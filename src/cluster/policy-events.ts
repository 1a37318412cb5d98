// Kubernetes Events on NetworkPolicies and ClusterNetworkPolicies netfence cannot enforce as written (an
// invalid CIDR, a bad selector, an unknown peer, …): one Warning Event per problem per node, so
// `kubectl describe networkpolicy` (or `… clusternetworkpolicy`) shows what
// is wrong where it is looked for. Deduplicated twice: in the daemon (a problem is reported once while it
// lasts) and across restarts (the Event's name is a hash of node and problem; an existing one gets its
// series count patched instead of a second Event). events.k8s.io/v1, RBAC create + patch only.

import { EventsV1Api, V1MicroTime, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../log.js';
import { sha256, type ClusterSnapshot, type Problem } from '../model/index.js';

/** The part of an events.k8s.io/v1 Event netfence writes. */
export interface PolicyEvent {
  readonly apiVersion: 'events.k8s.io/v1';
  readonly kind: 'Event';
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly eventTime: string;
  readonly reportingController: string;
  readonly reportingInstance: string;
  readonly action: string;
  readonly reason: string;
  readonly type: 'Warning';
  readonly note: string;
  /** No namespace for a cluster-scoped object (a ClusterNetworkPolicy). */
  readonly regarding: { readonly apiVersion: string; readonly kind: string; readonly namespace?: string; readonly name: string };
}

export interface EventSeries {
  readonly count: number;
  readonly lastObservedTime: string;
}

export interface EventsClient {
  /** Resolves false when an Event of that name already exists (409). */
  create(event: PolicyEvent): Promise<boolean>;
  setSeries(namespace: string, name: string, series: EventSeries): Promise<void>;
}

export const REPORTING_CONTROLLER = 'netfence.io/netfence';
/** events.k8s.io validates note ≤ 1 kB. */
const MAX_NOTE = 1024;

/** MicroTime as the API server wants it: RFC 3339 with exactly six fractional digits. */
export const microTime = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/** The object a problem is about, when it is one that gets Events. */
interface Regarding {
  readonly apiVersion: string;
  readonly kind: string;
  /** Where the Event is written. */
  readonly eventNamespace: string;
  readonly namespace?: string;
  readonly name: string;
  /** What netfence does with the object meanwhile. */
  readonly consequence: (severity: Problem['severity']) => string;
}

const CNP_PREFIX = 'ClusterNetworkPolicy ';
const NP_PREFIX = 'NetworkPolicy ';

function regardingOf(object: string): Regarding | undefined {
  if (object.startsWith(NP_PREFIX)) {
    const [namespace, name] = object.slice(NP_PREFIX.length).split('/');
    if (!namespace || !name) return undefined;
    return {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      eventNamespace: namespace,
      namespace,
      name,
      consequence: (severity) =>
        severity === 'error'
          ? 'the pods it selects stay isolated in its directions and it allows nothing'
          : 'enforced, but not as it reads',
    };
  }
  if (object.startsWith(CNP_PREFIX)) {
    const name = object.slice(CNP_PREFIX.length);
    if (!name || name.includes('/')) return undefined;
    return {
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      // A cluster-scoped object's Events live in `default`, as client-go's recorder puts them ("if
      // namespace is empty, use metav1.NamespaceDefault"), which is where `kubectl describe` looks.
      eventNamespace: 'default',
      name,
      // "For 'Accept' rules, 'fail closed' means: 'treat the rule as matching no traffic'. For 'Deny' and
      // 'Pass' rules … 'treat the rule as a Deny all rule'."
      consequence: (severity) =>
        severity === 'error'
          ? 'fails closed: its Accept rules allow nothing, its Deny rules still deny, and a Deny or Pass rule that cannot be read denies everything'
          : 'enforced, but not as it reads',
    };
  }
  return undefined;
}

export function policyEvent(problem: Problem, node: string, now: Date): PolicyEvent | undefined {
  const about = regardingOf(problem.object);
  if (!about) return undefined;
  const id = sha256(`${about.kind === 'NetworkPolicy' ? '' : `${about.kind}\n`}${node}\n${problem.field}\n${problem.message}`, 'hex').slice(
    0,
    12,
  );
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    // Policy names are DNS subdomains (≤ 253); leave room for the suffix.
    metadata: { name: `${about.name.slice(0, 220)}.nf${id}`, namespace: about.eventNamespace },
    eventTime: microTime(now),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: `netfence-${node}`.slice(0, 128),
    action: 'Enforce',
    reason: problem.severity === 'error' ? 'PolicyNotEnforceable' : 'PolicyWarning',
    type: 'Warning',
    note: `node ${node}: ${problem.field}: ${problem.message}; ${about.consequence(problem.severity)}`.slice(0, MAX_NOTE),
    regarding: {
      apiVersion: about.apiVersion,
      kind: about.kind,
      ...(about.namespace !== undefined ? { namespace: about.namespace } : {}),
      name: about.name,
    },
  };
}

/**
 * The problems this node writes Events for. Every node used to write one for every invalid policy of the
 * cluster, so Events grew with the node count even for namespaces a node has no pod of. Now a
 * NetworkPolicy's problem is reported by the nodes with a pod in its namespace (the only pods it can select:
 * where it fails closed, and where a node budget can refuse it), and a ClusterNetworkPolicy's, the same on
 * every node, by one elected reporter: the node whose name sorts first among the cluster's Nodes (this node
 * itself while no Node is known). Everything is still logged, counted and shown by inspect on every node.
 */
export function problemsToReport(problems: readonly Problem[], snapshot: ClusterSnapshot, node: string): Problem[] {
  const about = problems.map((p) => ({ p, about: regardingOf(p.object) })).filter((x) => x.about !== undefined);
  if (about.length === 0) return [];
  let localNamespaces: ReadonlySet<string> | undefined;
  const hasLocalPods = (namespace: string): boolean => {
    localNamespaces ??= namespacesWithPodsOn(snapshot.pods, node);
    return localNamespaces.has(namespace);
  };
  const reporter = snapshot.nodes.reduce<string | undefined>(
    (first, n) => (first === undefined || n.name < first ? n.name : first),
    undefined,
  );
  return about
    .filter(({ about: r }) => (r!.kind === 'NetworkPolicy' ? hasLocalPods(r!.namespace!) : (reporter ?? node) === node))
    .map(({ p }) => p);
}

/** Every sync reports its problems; the pod list is walked again only when it changed (the same list is the same object). */
const localNamespacesMemo = new WeakMap<ClusterSnapshot['pods'], { readonly node: string; readonly namespaces: ReadonlySet<string> }>();

function namespacesWithPodsOn(pods: ClusterSnapshot['pods'], node: string): ReadonlySet<string> {
  const memo = localNamespacesMemo.get(pods);
  if (memo?.node === node) return memo.namespaces;
  const namespaces = new Set<string>();
  for (const pod of pods) if (pod.nodeName === node && !pod.hostNetwork) namespaces.add(pod.namespace);
  localNamespacesMemo.set(pods, { node, namespaces });
  return namespaces;
}

/**
 * At most this many distinct Events per node per window. One per problem is the design, so this is room
 * for 300 problems at once, far past what a cluster shows in practice; what it bounds is a node's share of
 * the API server's Event load when something keeps producing new problems (every node reports the same ones:
 * 1,000 nodes at the cap is 300,000 writes per window). Past it a problem is not written as an Event while it
 * lasts; it is still logged, in /metrics (netfence_policy_problems) and in `netfence inspect`.
 */
export const EVENT_CAP = { maxEvents: 300, windowMs: 10 * 60_000 } as const;

/** What became of reports not written as they came (the daemon counts them in /metrics). */
export type ReportOutcome = 'coalesced' | 'dropped';

export interface PolicyEventsOptions {
  readonly client: EventsClient;
  readonly node: string;
  readonly now: () => Date;
  readonly logger: Logger;
  readonly cap?: { readonly maxEvents: number; readonly windowMs: number };
  readonly onReports?: (outcome: ReportOutcome, n: number) => void;
}

/**
 * Writes are serialised: one at a time, from a queue of the Events the latest report still wants. Reports
 * used to write concurrently, each for every problem not yet written, so a burst of syncs (200 invalid
 * policies, 50 updates to one of them) wrote the same Events again and again: 9,567 writes from one node.
 * Now a newer report replaces what is queued (coalesced), and a problem is written at most once while it lasts.
 */
export class PolicyEvents {
  /** Event keys written (or given up on at the cap) while their problem lasts, with how often each was seen. */
  private readonly reported = new Map<string, number>();
  /** Events the latest report wants written, in report order. */
  private readonly queue = new Map<string, PolicyEvent>();
  /** The latest report's Event keys. */
  private current = new Set<string>();
  private inFlight: string | undefined;
  private worker: Promise<void> | undefined;
  /** When each write of the current window was made (ms). */
  private writes: number[] = [];
  private capLogged = false;
  private readonly cap: { readonly maxEvents: number; readonly windowMs: number };

  constructor(private readonly opts: PolicyEventsOptions) {
    this.cap = opts.cap ?? EVENT_CAP;
  }

  /**
   * The current problems (the whole list): new ones are queued as Events, gone ones forgotten. Resolves once
   * the queue is empty (what this report wanted is written, or replaced by a later report).
   */
  report(problems: readonly Problem[]): Promise<void> {
    const now = this.opts.now();
    const wanted = new Map<string, PolicyEvent>();
    for (const p of problems) {
      const event = policyEvent(p, this.opts.node, now);
      if (event) wanted.set(`${event.metadata.namespace}/${event.metadata.name}`, event);
    }
    this.current = new Set(wanted.keys());
    for (const key of [...this.reported.keys()]) if (!wanted.has(key)) this.reported.delete(key);
    let coalesced = 0;
    for (const key of [...this.queue.keys()]) {
      if (wanted.has(key)) continue;
      this.queue.delete(key);
      coalesced++;
    }
    for (const [key, event] of wanted) {
      if (this.reported.has(key) || key === this.inFlight) continue;
      if (this.queue.has(key)) coalesced++;
      this.queue.set(key, event);
    }
    if (coalesced > 0) this.opts.onReports?.('coalesced', coalesced);
    this.worker ??= this.drain();
    return this.worker;
  }

  private async drain(): Promise<void> {
    // Yield first: report() must have stored this promise before the loop can finish and clear it.
    await Promise.resolve();
    try {
      for (let next = this.queue.entries().next(); !next.done; next = this.queue.entries().next()) {
        const [key, event] = next.value;
        this.queue.delete(key);
        if (!this.takeWrite()) {
          this.reported.set(key, 0);
          this.opts.onReports?.('dropped', 1);
          continue;
        }
        this.inFlight = key;
        const seen = await this.write(key, event);
        this.inFlight = undefined;
        // A report while it was written may have said the problem is gone: then it is not remembered.
        if (seen !== undefined && this.current.has(key)) this.reported.set(key, seen);
      }
    } finally {
      // No await between the last look at the queue and this: a report after it starts a new worker.
      this.worker = undefined;
    }
  }

  /** A slot in the window's cap, or false (logged once per window). */
  private takeWrite(): boolean {
    const now = this.opts.now().getTime();
    this.writes = this.writes.filter((t) => now - t < this.cap.windowMs);
    if (this.writes.length < this.cap.maxEvents) {
      this.capLogged = false;
      this.writes.push(now);
      return true;
    }
    if (!this.capLogged) {
      this.capLogged = true;
      this.opts.logger.warn('policy Event cap reached: further problems are not written as Events while they last', {
        maxEvents: this.cap.maxEvents,
        windowSeconds: this.cap.windowMs / 1000,
      });
    }
    return false;
  }

  /** Writes one Event; resolves to how often it has been seen, or undefined if the write failed. */
  private async write(key: string, event: PolicyEvent): Promise<number | undefined> {
    try {
      if (await this.opts.client.create(event)) return 1;
      // Written before (an earlier run of this daemon, or the problem came back): count it again.
      await this.opts.client.setSeries(event.metadata.namespace, event.metadata.name, { count: 2, lastObservedTime: event.eventTime });
      return 2;
    } catch (err) {
      // Not fatal and not retried in a loop: the problem is also in the log, /metrics and inspect.
      this.opts.logger.warn('could not write a policy Event', { event: key, error: (err as Error).message });
      return undefined;
    }
  }
}

/** The client-node implementation. */
export function kubeEventsClient(kubeConfig: KubeConfig): EventsClient {
  const api = kubeConfig.makeApiClient(EventsV1Api);
  return {
    async create(event) {
      try {
        await api.createNamespacedEvent({
          namespace: event.metadata.namespace,
          body: { ...event, eventTime: new V1MicroTime(event.eventTime) },
        });
        return true;
      } catch (err) {
        if ((err as { code?: number }).code === 409) return false;
        throw err;
      }
    },
    async setSeries(namespace, name, series) {
      // The generated client sends application/json-patch+json; `add` sets or replaces.
      await api.patchNamespacedEvent({ namespace, name, body: [{ op: 'add', path: '/series', value: series }] });
    },
  };
}
