// V8 flags the daemon runs with (the image's ENTRYPOINT and the sandbox/benchmark launchers use these).
// A node daemon on every machine should be small: Node's young generation may grow to 3 × 16 MiB
// semi-spaces, while the daemon's garbage is small and short-lived (one batch of events at a time), and
// --optimize-for-size trades some JIT speed for memory. Measured on the large tier (10,000 pods,
// `scripts/bench-daemon.ts --tier large --events 60`): VmRSS 200 → 159 MiB; event → programmed p99
// 63 → 87 ms (target < 100 ms). BENCHMARKS.md has the figures of the latest run.
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--optimize-for-size'];
