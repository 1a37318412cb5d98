// How much manifest text one read may load: a module of its own (no imports) because the configuration's
// defaults read it, and the manifest loader enforces it.

/** Byte limits on what a read of `--resources` loads; a file past either is not read (an error, never a shrink). */
export interface ManifestLimits {
  /** Largest single manifest file. */
  readonly maxFileBytes: number;
  /** Largest total of the manifest files one read loads (every given path together). */
  readonly maxTotalBytes: number;
}

// Measured with `compile` (docs/hostile-input.md): parsing YAML peaks at ~45 MiB of memory per MiB of the
// file, JSON at ~5 MiB per MiB; a file's parse is garbage once read, what stays is ~5 MiB per MiB. A 32 MiB
// YAML file peaks near 1.5 GiB (node's heap limit here is ~4 GiB); 32 MiB of JSON is a ~65,000-pod dump.
export const DEFAULT_MANIFEST_LIMITS: ManifestLimits = { maxFileBytes: 32 * 1024 * 1024, maxTotalBytes: 128 * 1024 * 1024 };
