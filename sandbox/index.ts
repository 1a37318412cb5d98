// The sandbox cluster for conformance tests and the demo: namespaces as nodes and pods, probe
// agents in each, and e2e-style reachability matrices over them.

export { createSandbox } from './topology.js';
export type { PodRef, PodSpec, Sandbox, SandboxExternal, SandboxNode, SandboxOptions, SandboxFamily, SandboxPod, SandboxSpec } from './topology.js';
export type { ProbeRequest, ProbeResult } from './agent.js';
export { DEFAULT_PORTS } from './agent.js';
export { probeMatrix, waitForMatrix } from './prober.js';
export type { Endpoints, ObservedMatrix, ProbeMatrixOptions, ProbeTarget, WaitForMatrixOptions, WaitForMatrixResult } from './prober.js';
export { cellOf, formatMatrix, matricesEqual, matrixOf, withCells, wrongCells } from './matrix.js';
export type { Matrix, MatrixCell, WrongCell } from './matrix.js';
export { nodeKey, podKey } from './names.js';
export { findLeftovers, removeLeftovers } from './leftovers.js';
export type { Leftovers } from './leftovers.js';
export { nodeCacheDir } from './cni-cache.js';
