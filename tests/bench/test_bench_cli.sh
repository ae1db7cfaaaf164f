#!/usr/bin/env bash
# syncgrad-bench's entry point: --help lists every subcommand with one line each, an unknown or missing
# subcommand fails with exit status 2 and names the valid ones, a bad option of a subcommand is refused,
# `cuda` either loads its module or says that this build has none, and quick `core`, `gemm`, `resnet`,
# `winograd` and `gpt-kernels` runs print their tables.
# Usage: test_bench_cli.sh path/to/syncgrad-bench
set -u
bin="$1"
. "$(dirname "$0")/../check.sh"
subcommands=(scaling core allreduce data ddp conv bf16 gemm resnet winograd gpt-kernels cuda checkpoint
             activation-checkpointing trace)

help=$("$bin" --help 2>&1); status=$?
echo "$help"
check "--help exits 0" test $status -eq 0
for s in "${subcommands[@]}"; do
  check "--help lists '$s' on a line of its own" grep -qE "^  $s +[^ ]" <<<"$help"
done
check "--help lists exactly these subcommands" test "$(grep -cE '^  [a-z]' <<<"$help")" -eq "${#subcommands[@]}"
check "--help hides the internal scaling-rank" bash -c '! grep -q scaling-rank <<<"$1"' _ "$help"

out=$("$bin" no-such-bench 2>&1); status=$?
echo "$out"
check "an unknown subcommand exits 2" test $status -eq 2
check "the error names the unknown subcommand" grep -q "unknown subcommand 'no-such-bench'" <<<"$out"
for s in "${subcommands[@]}"; do
  check "the error lists '$s'" grep -qE "valid: .*\b$s\b" <<<"$out"
done
out=$("$bin" 2>&1); status=$?
check "no subcommand exits 2" test $status -eq 2
check "no subcommand prints the list" grep -qE "^  core +" <<<"$out"

out=$("$bin" core --bogus 2>&1); status=$?
echo "$out"
check "a bad option of a subcommand exits 2" test $status -eq 2
check "the error names the option and the subcommand" grep -q "core: unknown or incomplete argument '--bogus'" <<<"$out"
out=$("$bin" bf16 --reps 0 2>&1); status=$?
check "bf16 refuses --reps 0 with exit 2" test $status -eq 2
check "bf16 names the refused argument" grep -q "bf16: unknown or incomplete argument '--reps'" <<<"$out"

out=$("$bin" gemm --threads 0 2>&1); status=$?
check "gemm refuses --threads 0 with exit 2" test $status -eq 2
check "gemm names the refused argument" grep -q "gemm: unknown or incomplete argument '--threads'" <<<"$out"
out=$("$bin" gemm --reps 1 2>&1); status=$?
echo "$out"
check "gemm --reps 1 exits 0" test $status -eq 0
check "gemm prints its table" grep -qE "^model +product +shape +matmul +sgemm +tiled +Eigen +picked" <<<"$out"
check "gemm times the three products of 9 layers" test "$(grep -cE ' (oneDNN|tiled|Eigen)$' <<<"$out")" -eq 27
check "gemm: the 12 x 768 GPT's forward goes to oneDNN" grep -qE "^gpt 12x768 +forward +512x768x3072 .* oneDNN$" <<<"$out"

out=$("$bin" resnet --batch 4 --reps 1 2>&1); status=$?
echo "$out"
check "resnet --batch 4 --reps 1 exits 0" test $status -eq 0
check "resnet prints the whole step" grep -qE "^whole step +[0-9.]+ +100%" <<<"$out"
check "resnet times ResNet-20's six fused normalisation shapes beside the separate ops" \
  test "$(grep -cE '^bn \+ (add \+ )?relu fwd\+bwd 4x[0-9x]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x$' <<<"$out")" -eq 6

out=$("$bin" winograd --reps 0 2>&1); status=$?
check "winograd refuses --reps 0 with exit 2" test $status -eq 2
check "winograd names the refused argument" grep -q "winograd: unknown or incomplete argument '--reps'" <<<"$out"
out=$("$bin" winograd --reps 1 2>&1); status=$?
echo "$out"
check "winograd --reps 1 exits 0" test $status -eq 0
row='^resnet(18|20) +[0-9]+ +[0-9]+ +[0-9]+ \| [a-z ]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ \| F\([24]x[24]\)$'
check "winograd times three passes of the ResNets' 7 stride-1 shapes in both tilings" \
  test "$(grep -cE "$row" <<<"$out")" -eq 21
check "winograd: 4x4 tiles where the images are larger than 4x4, 2x2 tiles on 4x4 images" \
  test "$(grep -cE '^resnet18 +64 +512 +4 .*F\(2x2\)$' <<<"$out") $(grep -cE 'F\(4x4\)$' <<<"$out")" = "3 18"

out=$("$bin" gpt-kernels --threads 0 2>&1); status=$?
check "gpt-kernels refuses --threads 0 with exit 2" test $status -eq 2
check "gpt-kernels names the refused argument" \
  grep -q "gpt-kernels: unknown or incomplete argument '--threads'" <<<"$out"
out=$("$bin" gpt-kernels --reps 1 2>&1); status=$?
echo "$out"
check "gpt-kernels --reps 1 exits 0" test $status -eq 0
check "gpt-kernels prints 1 thread beside 2" grep -qE '^kernel +1 thread +2 threads +speed-up$' <<<"$out"
check "gpt-kernels times its 9 kernels" test "$(grep -cE ' [0-9.]+ ms +[0-9.]+ ms +[0-9.]+x$' <<<"$out")" -eq 9
check "gpt-kernels counts the AdamW step's parameters from the model" \
  grep -qE '^AdamW step, [0-9]+ parameters in [0-9]+ tensors ' <<<"$out"

out=$("$bin" cuda --help 2>&1); status=$?
echo "$out"
if grep -qE '^  cuda .*\[not in this build\]' <<<"$help"; then
  check "cuda without the CUDA module fails" test $status -ne 0
  check "cuda says that this build has no CUDA module" grep -q "this build has no CUDA module" <<<"$out"
else
  check "cuda --help (its module loaded) exits 0" test $status -eq 0
  check "cuda --help shows the module's options" grep -q -- "--tf32" <<<"$out"
fi

out=$("$bin" core --quick --reps 1 2>&1); status=$?
echo "$out"
check "core --quick --reps 1 exits 0" test $status -eq 0
check "core prints its header" grep -q "^syncgrad-bench core: threads 1, 1 reps (median), quick" <<<"$out"
check "core prints its table" grep -qE "^item +syncgrad +reference +ratio +target +result" <<<"$out"
check "core times the 512 GEMM" grep -qE "^GEMM f32 512x512 @ 512x512 .*GFLOP/s" <<<"$out"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
