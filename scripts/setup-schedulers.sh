#!/usr/bin/env bash
# Optional scheduler tools for the tests of tests/sched/ (never needed by the product): Debian's Slurm
# (slurmctld, slurmd, the client commands), MUNGE (Slurm's authentication) and Open MPI's mpirun.
# Installed only when missing. The packages' services are kept from starting during the install (a
# temporary policy-rc.d), so no system slurmd/slurmctld/munged is left running to clash with the clusters
# the tests start themselves. Failure is not fatal: the tests that need these tools then skip visibly.
set -uo pipefail
missing=()
need() {  # need command package: the package is missing when the command is
  command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || missing+=("$2")
}
need slurmctld slurmctld
need slurmd slurmd
need sbatch slurm-client
need munged munge
need mpirun openmpi-bin
[ ${#missing[@]} -eq 0 ] && exit 0
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
policy=/usr/sbin/policy-rc.d
placed_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# placed by syncgrad scripts/setup-schedulers.sh during its install\nexit 101\n' |
    "${sudo_cmd[@]}" tee "$policy" >/dev/null && "${sudo_cmd[@]}" chmod 755 "$policy" && placed_policy=1
fi
echo "setup-schedulers: installing ${missing[*]}"
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
status=$?
[ $placed_policy -eq 1 ] && "${sudo_cmd[@]}" rm -f "$policy"
if [ $status -ne 0 ]; then
  echo "setup-schedulers: could not install ${missing[*]}; the Slurm/MPI tests will be skipped"
fi
exit 0
