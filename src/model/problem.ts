// A problem with one object the compiler or a loader met. Problems never stop the rest from compiling.

export type ProblemSeverity = 'error' | 'warning';

export interface Problem {
  /** What the problem is about: `NetworkPolicy ns/name`, `Pod ns/name`, or `file.yaml#2`. */
  readonly object: string;
  /** JSON-path-like location inside the object, e.g. `spec.ingress[0].ports[1].port`. */
  readonly field: string;
  readonly message: string;
  readonly severity: ProblemSeverity;
}

export const formatProblem = (p: Problem): string => `${p.severity}: ${p.object}: ${p.field}: ${p.message}`;
