// The object kinds netfence reads from the API or from manifests. Its own module because the schemas, their
// fast shape check and the converters all name them, and none of those should import another for it.

export type ObjectKind = 'Namespace' | 'Pod' | 'NetworkPolicy' | 'Node' | 'ClusterNetworkPolicy';

export const OBJECT_KINDS: readonly ObjectKind[] = ['Namespace', 'Pod', 'NetworkPolicy', 'Node', 'ClusterNetworkPolicy'];

export const isObjectKind = (kind: unknown): kind is ObjectKind => OBJECT_KINDS.includes(kind as ObjectKind);
