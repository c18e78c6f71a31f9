# Two "nodes" on one machine, for the tests and benchmarks that need two hosts: Linux network
# namespaces joined by a veth pair, each with an address that exists only inside it. Sourced:
#   netns_nodes_up TAG   makes ns=(sbn0_TAG sbn1_TAG), addr=(10.213.0.1 10.213.0.2) and
#                        removes them on EXIT (also on failure)
#   on I CMD...          runs CMD inside node I's namespace
# Needs root and iproute2; netns_nodes_possible says whether this machine has both.
netns_nodes_possible() { [ "$(id -u)" = 0 ] && command -v ip >/dev/null; }

netns_nodes_up() {
  local tag=$1 i
  ns=(sbn0_$tag sbn1_$tag)
  addr=(10.213.0.1 10.213.0.2)
  trap 'for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done' EXIT
  for i in 0 1; do ip netns add "${ns[$i]}"; done
  ip link add "sbv0_$tag" type veth peer name "sbv1_$tag"
  for i in 0 1; do
    ip link set "sbv${i}_$tag" netns "${ns[$i]}"
    ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev "sbv${i}_$tag"
    ip -n "${ns[$i]}" link set "sbv${i}_$tag" up
    ip -n "${ns[$i]}" link set lo up
  done
}

on() { local i=$1; shift; ip netns exec "${ns[$i]}" "$@"; }
