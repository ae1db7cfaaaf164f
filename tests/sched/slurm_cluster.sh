# shellcheck shell=bash
# A private Slurm cluster for the tests of tests/sched/ (sourced): its own MUNGE daemon (own key and socket),
# slurmctld and slurmd, with every conf/state/spool/log/pid file in one temporary directory and ports that are
# free on this machine, so it never touches (or clashes with) a system Slurm. Debian's packages
# (scripts/setup-schedulers.sh).
#
#   slurm_cluster_start 1   one node: this machine under its real hostname, its CPUs from `slurmd -C`
#   slurm_cluster_start 2   two nodes, node0 and node1, each a network namespace (joined by a veth pair,
#                           10.232.0.1 and 10.232.0.2) and host name with its own slurmd; munged and slurmctld run in
#                           node0's namespace, and so do the client commands (in_cluster). Where namespaces
#                           cannot be made, one node as above, with a note.
# $slurm_node_count says which it is.
#
# Then `in_cluster CMD...` runs a client command (srun, sbatch, scontrol) where it reaches the controller, with
# SLURM_CONF pointing at the cluster's slurm.conf; $slurm_dir is the temporary directory (tests put their files
# in $slurm_dir/work, which is removed with it). The daemons are killed and the directory and namespaces removed
# however the test ends (trap on EXIT). When the cluster cannot run here (not root, packages missing, a daemon
# that does not start or a node that does not come up within a bound) the test exits 77 with "skipped: <why>".
. "$(dirname "${BASH_SOURCE[0]}")/../launch/common.sh"

slurm_dir=""
slurm_pids=()
slurm_namespaces=()
slurm_exec=()
slurm_veth=""
slurm_node_count=0

slurm_cluster_stop() {
  local pid
  for pid in "${slurm_pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${slurm_pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  done
  # Whatever outlived the daemons (slurmstepd and the steps' tasks) carries the cluster's SLURM_CONF.
  if [ -n "$slurm_dir" ]; then
    for pid in $(grep -lsF "SLURM_CONF=$slurm_dir/" /proc/[0-9]*/environ | cut -d/ -f3); do kill -KILL "$pid" 2>/dev/null; done
  fi
  slurm_remove_namespaces
  [ -n "$slurm_dir" ] && rm -rf "$slurm_dir"
}
trap slurm_cluster_stop EXIT
trap 'exit 1' INT TERM

slurm_remove_namespaces() {
  local ns
  for ns in "${slurm_namespaces[@]}"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  [ -n "$slurm_veth" ] && ip link del "$slurm_veth" 2>/dev/null
  slurm_namespaces=()
  slurm_veth=""
}

# Two network namespaces joined by a veth pair (10.232.0.1, 10.232.0.2); false with the reason on stderr.
slurm_namespaces_up() {
  command -v ip >/dev/null || { echo "iproute2 is not installed" >&2; return 1; }
  command -v nsenter >/dev/null && command -v unshare >/dev/null || { echo "nsenter/unshare missing" >&2; return 1; }
  local i ns
  for i in 0 1; do
    ns="sg-slurm-$$-$i"
    ip netns add "$ns" || return 1
    slurm_namespaces+=("$ns")
  done
  slurm_veth="sgs$$a"
  ip link add "$slurm_veth" type veth peer name "sgs$$b" &&
    ip link set "$slurm_veth" netns "${slurm_namespaces[0]}" &&
    ip link set "sgs$$b" netns "${slurm_namespaces[1]}" &&
    ip -n "${slurm_namespaces[0]}" addr add 10.232.0.1/24 dev "$slurm_veth" &&
    ip -n "${slurm_namespaces[1]}" addr add 10.232.0.2/24 dev "sgs$$b" &&
    ip -n "${slurm_namespaces[0]}" link set lo up && ip -n "${slurm_namespaces[1]}" link set lo up &&
    ip -n "${slurm_namespaces[0]}" link set "$slurm_veth" up &&
    ip -n "${slurm_namespaces[1]}" link set "sgs$$b" up &&
    nsenter --net="/run/netns/${slurm_namespaces[0]}" unshare --mount --propagation private --uts true
}

slurm_skip() {  # slurm_skip reason [log file]: the cluster cannot run here
  echo "skipped: $1"
  if [ -n "${2:-}" ] && [ -f "$2" ]; then tail -5 "$2"; fi
  exit 77
}

in_cluster() { SLURM_CONF="$slurm_dir/slurm.conf" "${slurm_exec[@]}" "$@"; }

# slurm_run CMD...: runs CMD and returns its status, waiting in a way a signal to the test interrupts (bash runs
# a trap only once a foreground command ends), so a stopped test cleans up at once; CMD is killed with the cluster.
slurm_run() {
  "$@" &
  slurm_pids+=($!)
  wait $!
}

# in_node i CMD...: runs CMD as on node i: in its network namespace, under its host name (a UTS namespace),
# with a private mount namespace in which the node names resolve ($slurm_dir/hosts over /etc/hosts). Not
# `ip netns exec`: it remounts /sys, hiding the cgroup file system slurmd needs.
in_node() {
  local ns=${slurm_namespaces[$1]} name="node$1"; shift
  nsenter --net="/run/netns/$ns" unshare --mount --propagation private --uts \
    sh -c 'mount --bind "$0" /etc/hosts && hostname "$1" && shift && exec "$@"' "$slurm_dir/hosts" "$name" "$@"
}

slurm_free_port() {  # a TCP port nobody listens on, from 20000-59999, not in the list given
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    case " $* " in *" $port "*) continue ;; esac
    ss -Hltn "sport = :$port" 2>/dev/null | grep -q . || { echo "$port"; return; }
  done
}

slurm_node_state() { in_cluster scontrol show node "$1" 2>/dev/null | sed -n 's/.*State=\([A-Z+_]*\).*/\1/p'; }
slurm_node_idle() { case "$(slurm_node_state "$1")" in IDLE*) return 0 ;; *) return 1 ;; esac; }

slurm_cluster_start() {
  local nodes="$1"
  [ "$(id -u)" -eq 0 ] || slurm_skip "the test cluster's daemons run as root"
  local tool
  for tool in munged slurmctld slurmd srun sbatch scontrol; do
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
      slurm_skip "$tool is not installed (scripts/setup-schedulers.sh installs Debian's slurmctld, slurmd, slurm-client, munge)"
  done
  export PATH="$PATH:/usr/sbin"
  slurm_dir=$(mktemp -d /tmp/sg-slurm.XXXXXX)
  chmod 755 "$slurm_dir"
  mkdir -p "$slurm_dir/state" "$slurm_dir/munge" "$slurm_dir/work" "$slurm_dir/spool"
  chmod 700 "$slurm_dir/munge"
  local d="$slurm_dir" names=() ctld_addr hostname

  if [ "$nodes" -eq 2 ] && ! slurm_namespaces_up 2>"$d/netns.err"; then
    echo "note: no two namespaced nodes here ($(tail -1 "$d/netns.err")); one node runs every task"
    slurm_remove_namespaces
    nodes=1
  fi
  slurm_node_count=$nodes
  if [ "$nodes" -eq 1 ]; then
    hostname=$(hostname -s)
    names=("$hostname")
  else
    hostname=node0  # slurmctld's host
    names=(node0 node1)
    { cat /etc/hosts; echo "10.232.0.1 node0"; echo "10.232.0.2 node1"; } >"$d/hosts"
    slurm_exec=(in_node 0)
  fi

  # MUNGE: a fresh key, the socket in our directory; Slurm finds it through AuthInfo=socket=.
  dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$d/munge/munge.key"
  "${slurm_exec[@]}" munged --force --socket="$d/munge/socket" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" --seed-file="$d/munge/seed" 2>"$d/munge/start.err" ||
    slurm_skip "munged did not start: $(tail -1 "$d/munge/start.err")" "$d/munge/munged.log"
  wait_for 10 test -s "$d/munge/munged.pid" || slurm_skip "munged wrote no pid file" "$d/munge/munged.log"
  slurm_pids+=("$(cat "$d/munge/munged.pid")")

  local ctld_port slurmd_port cpus sockets cores threads memory
  ctld_port=$(slurm_free_port)
  slurmd_port=$(slurm_free_port "$ctld_port")
  local conf_line
  conf_line=$(slurmd -C 2>/dev/null | head -1)
  cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$conf_line")
  [ -n "$cpus" ] || slurm_skip "slurmd -C printed no CPUs= ($conf_line)"
  if [ "$nodes" -eq 1 ]; then
    ctld_addr=127.0.0.1
    # The machine as slurmd sees it (CPUs, sockets, cores, threads, memory), under its real hostname.
    node_lines="${conf_line} NodeAddr=127.0.0.1 State=UNKNOWN"
  else
    ctld_addr=10.232.0.1
    # The CPUs are shared by the two namespaced nodes: each is declared with them all (the tasks are few).
    sockets=$(sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$conf_line")
    cores=$(sed -n 's/.*CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$conf_line")
    threads=$(sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$conf_line")
    memory=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$conf_line")
    node_lines="NodeName=node0 NodeAddr=10.232.0.1 NodeHostname=node0 CPUs=$cpus SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$((memory / 2)) State=UNKNOWN
NodeName=node1 NodeAddr=10.232.0.2 NodeHostname=node1 CPUs=$cpus SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$((memory / 2)) State=UNKNOWN"
  fi
  cat >"$d/slurm.conf" <<EOF
# Generated by tests/sched/slurm_cluster.sh for one test run.
ClusterName=syncgradtest
SlurmctldHost=$hostname($ctld_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# cred_expire: Slurm holds a requeued job back this long (+1 s), until the old run's credentials have expired
# (120 s by default); 10 s keeps the requeue tests short.
AuthInfo=socket=$d/munge/socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
# Look at pending jobs every 2 s instead of 60: a requeued job starts as soon as it may.
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
InactiveLimit=0
KillWait=5
MinJobAge=600
SlurmdTimeout=60
MessageTimeout=10
$node_lines
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  local pid
  export SLURM_CONF="$d/slurm.conf"  # the daemons', slurmstepd's and the tasks' mark (slurm_cluster_stop)
  "${slurm_exec[@]}" slurmctld -D -i -f "$d/slurm.conf" >"$d/slurmctld.out" 2>&1 & pid=$!
  slurm_pids+=("$pid")
  wait_for 20 in_cluster scontrol ping >/dev/null 2>&1 ||
    slurm_skip "slurmctld did not answer within 20 s" "$d/slurmctld.log"
  local i name
  for i in "${!names[@]}"; do
    name=${names[$i]}
    mkdir -p "$d/spool/$name"
    if [ "$nodes" -eq 1 ]; then
      slurmd -D -f "$d/slurm.conf" -N "$name" >"$d/slurmd-$name.out" 2>&1 & pid=$!
    else
      in_node "$i" slurmd -D -f "$d/slurm.conf" -N "$name" >"$d/slurmd-$name.out" 2>&1 & pid=$!
    fi
    slurm_pids+=("$pid")
  done
  for name in "${names[@]}"; do
    wait_for 30 slurm_node_idle "$name" ||
      slurm_skip "Slurm node $name did not register within 30 s (state: $(slurm_node_state "$name"))" "$d/slurmd-$name.log"
  done
  echo "Slurm test cluster up: nodes ${names[*]}, slurmctld port $ctld_port, slurmd port $slurmd_port ($d)"
}
