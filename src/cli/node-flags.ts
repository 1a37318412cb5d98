// How the daemon's process is started (the image's ENTRYPOINT/ENV and the sandbox/benchmark launchers use these).

// V8 flags. A node daemon on every machine should be small: Node's young generation may grow to 3 × 16 MiB
// semi-spaces, while the daemon's garbage is small and short-lived (one batch of events at a time), and
// --optimize-for-size trades some JIT speed for memory. Measured on the large tier (10,000 pods,
// `scripts/bench-daemon.ts --tier large --events 60`): VmRSS 200 → 159 MiB; event → programmed p99
// 63 → 87 ms (target < 100 ms). No heap cap (--max-old-space-size): a cluster larger than planned must not
// crash every node's daemon. BENCHMARKS.md has the figures of the latest run.
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--optimize-for-size'];

// Environment. glibc gives each thread that calls malloc its own arena (up to 8 per core), and the daemon's
// threads (libuv's pool, V8's GC and compiler threads, the conntrack worker) each keep the memory they
// freed in theirs: after bursts of child-process output and GC work the process holds it as resident
// memory. Two arenas bound that; malloc-heavy work here is not contended enough to need more. Measured at
// xl (50,000 pods, 1,000 events, scripts/bench-daemon.ts): VmRSS 213 → 205 MiB after the first sync,
// 242 → 233 MiB after the events, peak 278 → 256 MiB.
export const DAEMON_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
