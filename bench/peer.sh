# shellcheck shell=bash
# The PyTorch that bench/*_vs_pytorch.sh compare against (sourced by them, from the repository root).
# Default: PyTorch 2.x from PyPI in build/peer-venv (scripts/setup-peers.sh; MKL and oneDNN inside the wheel).
# SYNCGRAD_PEER=debian: Debian's python3-torch 1.13 with libblas.so.3 at OpenBLAS, from
# scripts/setup-crosscheck.sh's venv -- the peer of the older figures in docs/BENCHMARKS.md.
# SYNCGRAD_BENCH_THREADS=N (default 1): the intra-op threads of both sides (the scripts pass --threads N to
# syncgrad-train; the peer gets OMP_NUM_THREADS=N, MKL_NUM_THREADS=N).
# Defines run_peer (runs python with the peer's environment), peer_python and threads; prints the peer line.
threads=${SYNCGRAD_BENCH_THREADS:-1}
[[ "$threads" =~ ^[1-9][0-9]*$ ]] || { echo "SYNCGRAD_BENCH_THREADS='$threads': a positive number of threads"; exit 1; }
case "${SYNCGRAD_PEER:-pypi}" in
  pypi)
    peer_python=build/peer-venv/bin/python
    [ -x "$peer_python" ] || { echo "no PyTorch 2.x peer: run scripts/setup-peers.sh (or SYNCGRAD_PEER=debian)"; exit 1; }
    peer_env=(OMP_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads")
    ;;
  debian)
    peer_python=build/crosscheck-venv/bin/python
    openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
    [ -x "$peer_python" ] || { echo "run scripts/setup-crosscheck.sh first"; exit 1; }
    [ -e "$openblas/libblas.so.3" ] || { echo "install libopenblas0-pthread for a fair Debian PyTorch baseline"; exit 1; }
    peer_env=(OMP_NUM_THREADS="$threads" LD_LIBRARY_PATH="$openblas")
    ;;
  *) echo "SYNCGRAD_PEER='$SYNCGRAD_PEER': pypi (PyTorch 2.x, the default) or debian (python3-torch 1.13)"; exit 1 ;;
esac
run_peer() { env "${peer_env[@]}" "$peer_python" "$@"; }
run_peer bench/peer_info.py
