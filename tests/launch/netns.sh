# shellcheck shell=bash
# Two "nodes" on one machine for the multi-node launcher tests (sourced after common.sh): network namespaces
# $ns0 and $ns1 joined by a veth pair, with 10.231.N.1 (node 0) and 10.231.N.2 (node 1) that exist only inside
# them (N: the caller's subnet, so that tests may share the machine). Skips the test (77) without root or
# iproute2. netns_cleanup removes them; the caller's EXIT trap must call it. start_two_node_test does it all for
# a test: a temporary directory $tmp, a list $pids of processes to kill at the end, the trap and the check.
# Usage: setup_two_nodes SUBNET    or    start_two_node_test SUBNET
setup_two_nodes() {
  if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then echo "skipped: needs root and iproute2"; exit 77; fi
  ns0=sg-mn-$$-0
  ns1=sg-mn-$$-1
  veth0=sgm$$a
  veth1=sgm$$b
  addr0=10.231.$1.1
  addr1=10.231.$1.2
  local err
  if ! err=$(ip netns add "$ns0" 2>&1); then echo "skipped: ip netns add failed: $err"; exit 77; fi
  ip netns add "$ns1" &&
    ip link add "$veth0" type veth peer name "$veth1" &&
    ip link set "$veth0" netns "$ns0" &&
    ip link set "$veth1" netns "$ns1" &&
    ip -n "$ns0" addr add "$addr0/24" dev "$veth0" &&
    ip -n "$ns1" addr add "$addr1/24" dev "$veth1" &&
    ip -n "$ns0" link set lo up && ip -n "$ns1" link set lo up &&
    ip -n "$ns0" link set "$veth0" up && ip -n "$ns1" link set "$veth1" up
}
netns_cleanup() {
  ip netns del "$ns0" 2>/dev/null
  ip netns del "$ns1" 2>/dev/null
  ip link del "$veth0" 2>/dev/null
}
two_node_test_cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  netns_cleanup
  rm -rf "$tmp"
}
start_two_node_test() {
  tmp=$(mktemp -d)
  pids=()
  trap two_node_test_cleanup EXIT
  trap 'exit 1' INT TERM
  setup_two_nodes "$1"
  check "namespaces and veth pair set up" test $? -eq 0
}
