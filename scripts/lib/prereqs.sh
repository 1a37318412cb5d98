# Shared set-up for scripts/*.sh: system packages via apt (as root), node_modules via npm ci.
# nftables: `nft`, which the sandbox's kube-proxy uses in nftables mode (Service tests).
NETFENCE_APT_PACKAGES="iptables ipset iproute2 conntrack python3 nftables"

ensure_system_packages() {
  local missing=()
  for tool in iptables-nft-restore iptables-legacy-restore ipset ip conntrack python3 nft; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != "0" ]; then
    echo "missing system tools (${missing[*]}); install as root: apt-get install -y $NETFENCE_APT_PACKAGES" >&2
    return 0
  fi
  echo "installing system packages: $NETFENCE_APT_PACKAGES" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $NETFENCE_APT_PACKAGES >/dev/null
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

# What every entry script needs before it runs: system tools, node_modules, a fresh dist/.
prepare() {
  ensure_system_packages
  ensure_node_modules
  npm run --silent build
}
