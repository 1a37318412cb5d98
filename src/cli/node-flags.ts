// How the daemon's process is started (the image's ENTRYPOINT/ENV and the sandbox/benchmark launchers use these).

// V8 flags. A node daemon on every machine should be small: Node's young generation may grow to 3 × 16 MiB
// semi-spaces, while the daemon's garbage is small and short-lived (one batch of events at a time), and
// --optimize-for-size trades some JIT speed for memory. Measured on the large tier (10,000 pods,
// `scripts/bench-daemon.ts --tier large --events 60`): VmRSS 200 → 159 MiB; event → programmed p99
// 63 → 87 ms (target < 100 ms). No heap cap (--max-old-space-size): a cluster larger than planned must not
// crash every node's daemon. BENCHMARKS.md has the figures of the latest run.
// --optimize-for-size also lets the old generation grow only ~10 % past what a full collection left, so a
// start-up that builds a large heap collects it in full again every few MB: at 100,000 pods about 30 full
// collections before ready, more than half of the daemon's CPU. --heap-growing-percent=50 lets it grow by half
// instead (the default without --optimize-for-size is larger still). Measured at 100,000 pods
// (`scripts/bench-daemon.ts --tier xxl --events 4 --node-flags …`, two runs each): daemon CPU to ready
// 9.1 / 9.4 → 5.5 / 5.5 s, peak RSS by ready 193 → 222 MiB, VmRSS programmed 236 / 247 → 318 / 246 MiB,
// peak VmHWM 310 / 323 → 318 / 328 MiB; at 10,000 pods VmRSS programmed 125–130 → 132 MiB.
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--optimize-for-size', '--heap-growing-percent=50'];

// Environment (glibc malloc). Each thread that calls malloc gets its own arena (up to 8 per core), and the
// daemon's threads (libuv's pool, V8's GC and compiler threads, the conntrack worker) each keep what they freed
// in theirs: two arenas bound that. And glibc raises its mmap threshold to the largest block freed so far (up
// to 32 MiB) and its trim threshold to twice that, so once a few-MB child-process output (`ipset save` at
// 50,000 pods is 7 MB) has been freed, later ones come from the heap and their pages stay resident; a fixed
// 128 KiB threshold returns every large block to the kernel on free. Measured at xl (50,000 pods, 1,000 events,
// scripts/bench-heap.ts --at events --idle 60, two runs side by side): RSS after the first sync / after the
// events / peak 183 / 213 / 252 → 175 / 196 / 237 MiB with the threshold (both with two arenas), malloc and
// other non-V8 anonymous memory 29.9 → 10.1 MiB, the daemon's own sync time unchanged (187 / 186 ms mean).
// Two arenas alone, against none: 213 → 205 / 242 → 233 / 278 → 256 MiB (scripts/bench-daemon.ts).
export const DAEMON_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };
