#!/usr/bin/env bash
# syncgrad-train --device: bad devices and backends are refused with a message naming them; with a CUDA module
# (the emulated one of the build, which runs the module's host code and kernel bodies on the CPU with two fake
# devices) the MLP, the CNN and the GPT train on cuda:0 with the CPU run's losses and accuracy, and so do
# --amp fp16 and DataParallel over cuda:0 and cuda:1 (against the CPU DataParallel); a checkpoint written on
# CUDA resumes on the CPU, a diverging run names the CPU run's step, and devices beyond those present are
# refused. The data are small subsets of Fashion-MNIST (the emulated kernels are slow).
# Usage: test_device_cli.sh syncgrad-train [module.so]
set -u
bin="$1"
module="${2:-}"
. "$(dirname "$0")/../check.sh"
fails_saying() {  # fails_saying "text" args...: the run fails and its output contains text
  local text="$1"; shift
  local out status
  out=$("$bin" "$@" 2>&1); status=$?
  [ $status -ne 0 ] && grep -qF -- "$text" <<<"$out" || { echo "$out" | tail -n 3; return 1; }
}
check "--help mentions --device" grep -q -- "--device" <<<"$("$bin" --help)"
check "an unknown device is named" fails_saying "tpu" --device tpu --max-steps 1
check "nccl on the CPU is refused with the fix" fails_saying "--device cuda" --backend nccl --max-steps 1
check "no CUDA module: the reason and the fix" env SYNCGRAD_CUDA_MODULE=/nonexistent/libsyncgrad_cuda.so \
  bash -c "$(declare -f fails_saying); bin='$bin'; fails_saying 'train on the CPU with --device cpu' --device cuda"

if [ -z "$module" ]; then
  echo "skipped: training on CUDA (no CUDA module built; the emulated module comes with nvcc)"
  [ $failures -eq 0 ] && exit 0 || exit 1
fi
export SYNCGRAD_CUDA_MODULE="$module" SYNCGRAD_FAKE_CUDA_DEVICES=2
check "cuda:N beyond the devices present is refused" fails_saying "2 CUDA device(s) are visible" --device cuda:5
check "DataParallel beyond the GPUs present is refused" fails_saying "lower --dp-workers" --device cuda --parallel dp \
  --dp-workers 3
check "gloo with CUDA tensors is refused with the fix" fails_saying "--backend nccl" --device cuda --backend gloo

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src="${SYNCGRAD_DATA_DIR:-/usr/share/datasets/fashion-mnist}"
if ! ls "$src"/train-images-idx3-ubyte* >/dev/null 2>&1; then
  echo "skipped: training on CUDA (Fashion-MNIST not installed)"
  [ $failures -eq 0 ] && exit 0 || exit 1
fi
# The first 256 training and 200 test examples, in the IDX format (gzip).
python3 - "$src" "$work/data" <<'PY'
import gzip, os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst)
for split, count in (("train", 256), ("t10k", 200)):
    for kind, item in (("images-idx3-ubyte", 784), ("labels-idx1-ubyte", 1)):
        name = f"{split}-{kind}"
        path = os.path.join(src, name + ".gz")
        data = gzip.open(path).read() if os.path.exists(path) else open(os.path.join(src, name), "rb").read()
        header = 16 if item == 784 else 8
        head = bytearray(data[:header])
        struct.pack_into(">I", head, 4, count)
        with gzip.open(os.path.join(dst, name + ".gz"), "wb") as f:
            f.write(bytes(head) + data[header:header + count * item])
PY
losses() { grep -o "loss [0-9.]*" <<<"$1" | tr '\n' ' '; }
summary() { grep -o "test accuracy [0-9.]*%\|validation loss [0-9.]*" <<<"$1"; }
for model in mlp cnn; do
  steps=8; [ "$model" = cnn ] && steps=2
  args=(--model "$model" --data-dir "$work/data" --epochs 3 --max-steps "$steps" --log-every 1 --no-shuffle
        --workers 1)
  cpu=$("$bin" "${args[@]}" --device cpu 2>&1)
  gpu=$("$bin" "${args[@]}" --device cuda --checkpoint-dir "$work/ckpt-$model" 2>&1); status=$?
  check "$model trains on cuda:0" test $status -eq 0
  check "$model reports cuda:0 memory" grep -q "peak cuda:0 memory" <<<"$gpu"
  check "$model: the CUDA run's losses are the CPU run's" test "$(losses "$cpu")" = "$(losses "$gpu")"
  check "$model: the same test accuracy on both" test "$(summary "$cpu")" = "$(summary "$gpu")"
  [ $status -eq 0 ] || echo "$gpu" | tail -n 5
done
# A diverging run stops naming the same step on both devices (on CUDA the losses are read back in batches).
diverge=(--model mlp --data-dir "$work/data" --epochs 3 --max-steps 12 --log-every 10 --lr 1e12 --no-shuffle)
cpu=$("$bin" "${diverge[@]}" --device cpu 2>&1)
gpu=$("$bin" "${diverge[@]}" --device cuda 2>&1); status=$?
check "a non-finite loss on CUDA stops the run" test $status -ne 0
check "it names the step the CPU run names" test "$(grep -o "loss became .* at step [0-9]*" <<<"$gpu")" = \
  "$(grep -o "loss became .* at step [0-9]*" <<<"$cpu")"
amp_args=(--model mlp --data-dir "$work/data" --max-steps 4 --log-every 1 --no-shuffle --amp fp16)
cpu=$("$bin" "${amp_args[@]}" --device cpu 2>&1)
gpu=$("$bin" "${amp_args[@]}" --device cuda 2>&1); status=$?
check "--amp fp16 trains on cuda:0 (autocast and GradScaler on the device)" test $status -eq 0
check "--amp fp16 on CUDA has the CPU run's losses and loss scale" \
  test "$(losses "$cpu") $(grep -o "scale [0-9]*" <<<"$cpu" | tail -n 1)" = \
       "$(losses "$gpu") $(grep -o "scale [0-9]*" <<<"$gpu" | tail -n 1)"
dp_args=(--model mlp --data-dir "$work/data" --max-steps 3 --log-every 1 --no-shuffle --parallel dp --dp-workers 2)
cpu=$("$bin" "${dp_args[@]}" --device cpu 2>&1)
gpu=$("$bin" "${dp_args[@]}" --device cuda 2>&1); status=$?
check "DataParallel over cuda:0 and cuda:1 trains" test $status -eq 0
check "DataParallel on two GPUs has the CPU DataParallel's losses" test "$(losses "$cpu")" = "$(losses "$gpu")"
resumed=$("$bin" --model mlp --data-dir "$work/data" --epochs 3 --max-steps 10 --log-every 1 --no-shuffle --workers 1 \
  --device cpu --resume "$work/ckpt-mlp" 2>&1); status=$?
check "a checkpoint written on CUDA resumes on the CPU" test $status -eq 0
check "the resumed run continues at step 9" grep -q "step 9/10" <<<"$resumed"
head -c 30000 /usr/share/games/fortunes/fortunes >"$work/text.txt" 2>/dev/null ||
  python3 -c "print('the quick brown fox jumps over the lazy dog. ' * 700)" >"$work/text.txt"
gpt=(--model gpt --data-dir "$work/text.txt" --model-config n_layer=1,n_embd=32,n_head=2,block_size=32
     --batch-size 8 --max-steps 6 --log-every 2 --workers 0)
cpu=$("$bin" "${gpt[@]}" --device cpu 2>&1)
gpu=$("$bin" "${gpt[@]}" --device cuda 2>&1); status=$?
check "gpt trains on cuda:0 (attention composed on CUDA)" test $status -eq 0
check "gpt: the CUDA run's losses are the CPU run's" test "$(losses "$cpu")" = "$(losses "$gpu")"
check "gpt: the same validation loss" test "$(summary "$cpu")" = "$(summary "$gpu")"
check "gpt on CUDA shows no CPU MFU" bash -c "! grep -q MFU <<<'$gpu'"
[ $failures -eq 0 ] && exit 0 || exit 1
