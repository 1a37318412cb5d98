// The sandbox cluster for conformance tests and the demo: namespaces as nodes and pods, probe
// agents in each, and e2e-style reachability matrices over them.

export { createSandbox } from './topology.js';
export type { Sandbox, SandboxExternal, SandboxFamily, SandboxNode, SandboxPod } from './topology.js';
export { probeMatrix, waitForMatrix } from './prober.js';
export type { ObservedMatrix, ProbeTarget, WaitForMatrixResult } from './prober.js';
export { cellOf, formatMatrix, matricesEqual, matrixOf, wrongCells } from './matrix.js';
export type { Matrix } from './matrix.js';
export { nodeCacheDir } from './cni-cache.js';
