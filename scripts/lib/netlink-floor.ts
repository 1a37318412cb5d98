// The kernel floor of one set update over netlink, with no relay: run inside the namespace
// (`ip netns exec NS node --import ./scripts/register-ts.mjs scripts/lib/netlink-floor.ts SET IP N`), it opens the
// ipset netlink writer in-process (as the DaemonSet's daemon does in its own namespace), adds and deletes IP in
// SET N times, one acknowledged request each, and prints the round trips in ms as one JSON array.

import { openIpsetNetlink } from '../../src/dataplane/ipset-netlink.js';

const [set, ip, n] = process.argv.slice(2);
if (!set || !ip) throw new Error('usage: netlink-floor.ts SET IP [N]');
const writer = await openIpsetNetlink();
const times: number[] = [];
for (let i = 0; i < Number(n ?? 200); i++) {
  const t0 = performance.now();
  await writer.apply([{ set, op: i % 2 === 0 ? 'add' : 'del', members: [ip] }]);
  times.push(performance.now() - t0);
}
await writer.close();
console.log(JSON.stringify(times));
