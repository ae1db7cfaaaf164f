// The subcommands of syncgrad-bench (bench/syncgrad_bench.cpp registers them in its table). Each is the former
// main() of its own program, so it is declared at global scope as main() was: argv[0] reads
// "<path to syncgrad-bench> <subcommand>", the rest are the subcommand's own arguments; the return value is
// the exit status.
#pragma once

int bench_scaling_main(int argc, char** argv);       // bench/scaling_subcommand.cpp
int bench_scaling_rank_main(int argc, char** argv);  // (hidden) one DDP rank of `scaling`
int bench_core_main(int argc, char** argv);          // bench/bench_core.cpp
int bench_allreduce_main(int argc, char** argv);     // bench/bench_allreduce.cpp, or bench/no_gloo.cpp
int bench_data_main(int argc, char** argv);          // bench/bench_data.cpp
int bench_ddp_main(int argc, char** argv);           // bench/bench_ddp.cpp
int bench_conv_main(int argc, char** argv);          // bench/bench_conv.cpp
int bench_bf16_main(int argc, char** argv);          // bench/bench_bf16.cpp
int bench_gemm_main(int argc, char** argv);          // bench/bench_gemm.cpp
int bench_resnet_main(int argc, char** argv);        // bench/bench_resnet.cpp
int bench_winograd_main(int argc, char** argv);      // bench/bench_winograd.cpp
int bench_gpt_kernels_main(int argc, char** argv);   // bench/bench_gpt_kernels.cpp
int bench_cuda_main(int argc, char** argv);          // bench/cuda_subcommand.cpp (loads bench/bench_cuda.cpp)
int bench_checkpoint_main(int argc, char** argv);    // bench/bench_checkpoint.cpp
int bench_activation_checkpointing_main(int argc, char** argv);  // bench/bench_activation_checkpointing.cpp
int bench_trace_main(int argc, char** argv);         // bench/bench_trace.cpp
