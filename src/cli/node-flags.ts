// V8 flags the daemon runs with (the image's ENTRYPOINT and the sandbox/benchmark launchers use these).
// Node's young generation may grow to 3 × 16 MiB semi-spaces; the daemon's garbage is small and short-lived
// (one batch of events at a time), so 2 MiB semi-spaces keep its resident memory about 35 MiB lower at
// 10,000 pods with the same event → programmed latency (`npm run bench`, rss-large and event-to-programmed).
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];
