#!/usr/bin/env bash
# The meson test 'install': installs a built tree into a temporary DESTDIR, checks that every public header
# was installed and that none includes a private dependency, then builds examples/custom_model.cpp against
# the installed copy twice -- as the outside meson project examples/standalone/ and with a plain g++ command
# line -- and runs both for 20 steps (the runs are skipped, visibly, without Fashion-MNIST).
# Usage: scripts/check-install.sh BUILD_DIR   (a complete build; nothing is rebuilt)
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== meson install --destdir $tmp/root"
meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root"
pc=$(find "$tmp/root" -name syncgrad.pc)
[ -n "$pc" ] || { echo "FAILED: no syncgrad.pc installed"; exit 1; }
# The .pc names the final prefix; point a copy of it at the DESTDIR (every other path is relative to prefix).
mkdir "$tmp/pkgconfig"
sed "s|^prefix=|prefix=$tmp/root|" "$pc" >"$tmp/pkgconfig/syncgrad.pc"
export PKG_CONFIG_PATH="$tmp/pkgconfig"
libdir=$(pkg-config --variable=libdir syncgrad)
inc=$(pkg-config --variable=includedir syncgrad)/syncgrad
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "installed: $(cd "$tmp/root" && find . -name 'libsyncgrad*' -o -name syncgrad.pc | sort | tr '\n' ' ')"
echo "pkg-config --cflags --libs syncgrad: $(pkg-config --cflags --libs syncgrad)"

cd "$src"  # the header list comes from the source tree
missing=0
# distributed/ keeps a few private headers (Gloo adapters, sockets, the store's wire format) beside its public ones.
private="distributed/gloo_reduce.h distributed/gloo_store.h distributed/socket.h
         distributed/route_address.h distributed/tcp_store_data.h distributed/tcp_store_protocol.h
         distributed/gloo_small_allreduce.h distributed/gloo_ring.h distributed/gloo_counted_buffer.h
         distributed/tcp_store_log.h distributed/job_identity.h distributed/env_values.h distributed/rendezvous_report.h
         distributed/rank_heartbeat.h profiler/thread_buffer.h profiler/session_state.h"
for h in syncgrad.h tensor/*.h tensor/ops/*.h tensor/io/*.h autograd/*.h autograd/ops/*.h nn/*.h optim/*.h \
         data/*.h distributed/*.h models/*.h profiler/*.h; do
  case " $(echo $private) " in *" $h "*) continue ;; esac
  [ -e "$inc/$h" ] || { echo "FAILED: $h is not installed (add it to install_headers in meson.build)"; missing=1; }
done
[ $missing -eq 0 ] || exit 1
if grep -rnE '#include [<"](Eigen|unsupported/Eigen|nlohmann|gloo/|syncgrad_config\.h|tensor/cpu/|tensor/cuda/)' "$inc"; then
  echo "FAILED: an installed header includes a private dependency (above)"; exit 1
fi
echo "ok: $(find "$inc" -name '*.h' | wc -l) headers installed under include/syncgrad, none includes Eigen/json/config"

echo "== meson project examples/standalone against the installed syncgrad"
meson setup "$tmp/standalone" "$src/examples/standalone" >"$tmp/setup.log" || { cat "$tmp/setup.log"; exit 1; }
ninja -C "$tmp/standalone" >"$tmp/ninja.log" || { cat "$tmp/ninja.log"; exit 1; }
echo "== g++ -std=c++20 custom_model.cpp \$(pkg-config --cflags --libs syncgrad)"
# shellcheck disable=SC2046  # the flags must split into words
g++ -std=c++20 -O2 "$src/examples/custom_model.cpp" $(pkg-config --cflags --libs syncgrad) -o "$tmp/custom-model-gxx"

data_dir=${SYNCGRAD_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if ! ls "$data_dir"/train-images-idx3-ubyte* >/dev/null 2>&1; then
  echo "SKIPPED: running the examples (no Fashion-MNIST in $data_dir); install and builds passed"
  exit 0
fi
for bin in "$tmp/standalone/custom-model-example" "$tmp/custom-model-gxx"; do
  echo "== $bin --max-steps 20"
  lib=$(ldd "$bin" | awk '/libsyncgrad\.so/ {print $3}')
  case "$lib" in "$tmp"/*) ;; *) echo "FAILED: $bin loads libsyncgrad from '$lib', not the install"; exit 1 ;; esac
  out=$("$bin" --max-steps 20 --out "$tmp/model.safetensors" 2>&1) || { echo "$out"; echo "FAILED: $bin"; exit 1; }
  echo "$out" | grep -E 'step|accuracy|saved'
  if ! grep -q 'trained 20 steps; test accuracy' <<<"$out" || [ ! -s "$tmp/model.safetensors" ]; then
    echo "FAILED: $bin did not train 20 steps and save"; exit 1
  fi
  rm "$tmp/model.safetensors"
done
echo "ok: install, pkg-config, standalone meson build, plain g++ build and runs"
