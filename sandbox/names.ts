// Names of everything a sandbox creates. Every network namespace carries the run's prefix
// (`nfs<4 hex>-`), so parallel runs never collide and leftovers are recognisable.

import { randomBytes } from 'node:crypto';

/** k8s namespace / pod / node names as the sandbox accepts them (DNS-label-ish, no `/`). */
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** Namespace names are DNS labels: no dots, which lets `.` separate namespace and pod in netns names. */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function checkName(kind: 'node' | 'pod', name: string): void {
  if (!NAME.test(name) || name.length > 63) throw new Error(`invalid ${kind} name "${name}"`);
}

export function checkNamespace(name: string): void {
  if (!NAMESPACE.test(name) || name.length > 63) throw new Error(`invalid namespace name "${name}"`);
}

export function randomRunId(): string {
  return randomBytes(2).toString('hex');
}

export function checkRunId(id: string): void {
  if (!/^[0-9a-z]{1,8}$/.test(id)) throw new Error(`invalid sandbox id "${id}" (1-8 of [0-9a-z])`);
}

export interface SandboxNames {
  /** `nfs<id>-`: every netns of this run starts with it. */
  readonly prefix: string;
  readonly underlayNetns: string;
  nodeNetns(node: string): string;
  podNetns(namespace: string, pod: string): string;
}

export function sandboxNames(id: string): SandboxNames {
  checkRunId(id);
  const prefix = `nfs${id}-`;
  return {
    prefix,
    underlayNetns: `${prefix}underlay`,
    nodeNetns: (node) => `${prefix}node-${node}`,
    podNetns: (namespace, pod) => `${prefix}pod-${namespace}.${pod}`,
  };
}

/** flannel's bridge plugin names the host side of a pod's veth `veth` + 8 random hex digits. */
export function randomVethName(): string {
  return `veth${randomBytes(4).toString('hex')}`;
}

/** The pod's key in matrices and lookups, as the e2e netpol tests write it: `namespace/pod`. */
export const podKey = (namespace: string, name: string): string => `${namespace}/${name}`;

/** A node as a probe source or target: `node:<name>` (a colon cannot occur in a namespace name). */
export const nodeKey = (node: string): string => `node:${node}`;
