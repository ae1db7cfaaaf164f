// syncgrad-bench cuda: the CUDA backend's figures beside their raw references in one run: GEMM TFLOP/s through
// syncgrad (raw::mm / raw::linear on CUDA tensors) vs cublasGemmEx on the same device buffers (target: >= 90%),
// copy bandwidth through syncgrad (device copies, dtype-converting and strided copies, host <-> device) vs
// cudaMemcpy, and the training step of models::CNN vs PyTorch's on the same GPU (bench/torch_cuda_cnn.py,
// when torch with CUDA is importable; target: at least as fast). Each figure is the median of --reps samples,
// ours and the reference alternating (A B A B ...), timed with the device synchronised around each sample.
// Without a CUDA device it says so and exits 0 (scripts/gpu-check.sh runs it on the GPU machine). Built as a
// shared module that syncgrad-bench loads for this subcommand (bench/cuda_module.h).
//   syncgrad-bench cuda [--reps N] [--quick] [--tf32] [--torch-script PATH]
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tools/cli_checks.h"
#include "bench/cuda_module.h"
#include "syncgrad.h"

namespace {

using namespace syncgrad;
using Clock = std::chrono::steady_clock;

const Device kCuda0(DeviceType::kCUDA, 0);

struct Options {
  int reps = 5;
  bool quick = false;
  bool tf32 = false;
  std::string torch_script = SYNCGRAD_BENCH_DIR "/torch_cuda_cnn.py";
};

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, cublasGetStatusString(status));
    std::exit(1);
  }
}

void sync_all() {
  device_backend(DeviceType::kCUDA)->synchronize(0);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Seconds per call of f over `iters` calls, the device idle before and after.
double seconds_per_call(int iters, const std::function<void()>& f) {
  sync_all();
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) f();
  sync_all();
  return std::chrono::duration<double>(Clock::now() - start).count() / iters;
}

struct Pair {
  double ours = 0, reference = 0, ratio = 0;  // medians of seconds per call, and of reference / ours per pair
};

Pair time_pair(const Options& opt, int iters, const std::function<void()>& ours,
               const std::function<void()>& reference) {
  for (int w = 0; w < 2; ++w) {
    ours();
    reference();
  }
  std::vector<double> a, b, r;
  for (int rep = 0; rep < opt.reps; ++rep) {
    a.push_back(seconds_per_call(iters, ours));
    b.push_back(seconds_per_call(iters, reference));
    r.push_back(b.back() / a.back());
  }
  return {median(a), median(b), median(r)};
}

cudaDataType cuda_type(DType dtype) {
  switch (dtype) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

// out (M, N) = a (M, K) @ b (K, N), all row-major: column-major C^T = B^T A^T, as syncgrad hands it to cuBLAS.
void raw_gemm(cublasHandle_t handle, DType dtype, const Tensor& a, const Tensor& b, const Tensor& out, bool tf32,
              bool b_transposed) {
  const int m = static_cast<int>(out.size(0)), n = static_cast<int>(out.size(1)), k = static_cast<int>(a.size(1));
  const float alpha = 1.0f, beta = 0.0f;
  const cublasComputeType_t compute = dtype == DType::f32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  // b_transposed: b is the transpose of a row-major (N, K) matrix.
  check(cublasGemmEx(handle, b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b.data_ptr(),
                     cuda_type(dtype), b_transposed ? k : n, a.data_ptr(), cuda_type(dtype), k, &beta, out.data_ptr(),
                     cuda_type(dtype), n, compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

void gemm_table(const Options& opt) {
  cublasHandle_t handle = nullptr;
  check(cublasCreate(&handle), "cublasCreate");
  std::printf(
      "\nGEMM (M x K) @ (K x N): TFLOP/s through syncgrad vs cublasGemmEx on the same buffers (target >= 90%%)%s\n",
      opt.tf32 ? ", float32 on TF32" : "");
  std::printf("%-9s %-22s %-6s %12s %12s %8s %s\n", "dtype", "M x K x N", "op", "syncgrad", "cuBLAS", "ratio",
              "result");
  struct Shape3 {
    int64_t m, k, n;
  };
  std::vector<Shape3> shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}, {16384, 1024, 4096}, {512, 4096, 512}};
  if (opt.quick) shapes = {{2048, 2048, 2048}};
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (const Shape3& s : shapes) {
      for (bool linear : {false, true}) {
        Generator gen(1);
        const Tensor a = randn({s.m, s.k}, {.dtype = dtype, .device = kCuda0}, &gen);
        // mm: b (K, N) row-major; linear: weight (N, K) used transposed, as nn::Linear does.
        const Tensor b = linear ? randn({s.n, s.k}, {.dtype = dtype, .device = kCuda0}, &gen)
                                : randn({s.k, s.n}, {.dtype = dtype, .device = kCuda0}, &gen);
        const Tensor out = empty({s.m, s.n}, {.dtype = dtype, .device = kCuda0});
        const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n);
        const int iters = std::max(3, static_cast<int>(2e13 / flops / (dtype == DType::f32 ? 8 : 1)));
        const Pair p = time_pair(
            opt, iters, [&] { linear ? raw::linear(a, b) : raw::mm(a, b); },
            [&] { raw_gemm(handle, dtype, a, b, out, opt.tf32, linear); });
        const std::string dims = std::to_string(s.m) + " x " + std::to_string(s.k) + " x " + std::to_string(s.n);
        std::printf("%-9s %-22s %-6s %12.1f %12.1f %7.0f%% %s\n", dtype_name(dtype), dims.c_str(),
                    linear ? "A B^T" : "A B", flops / p.ours / 1e12, flops / p.reference / 1e12, 100.0 * p.ratio,
                    p.ratio >= 0.9 ? "met" : "NOT MET");
      }
    }
  }
  cublasDestroy(handle);
}

void copy_table(const Options& opt) {
  const int64_t n = opt.quick ? (int64_t{1} << 26) : (int64_t{1} << 28);  // float32 elements (1 GiB full size)
  const double bytes = static_cast<double>(n) * 4;
  std::printf(
      "\nCopies of %.0f MiB: GB/s through syncgrad vs cudaMemcpy (bytes read + written / 2 for device copies)\n",
      bytes / (1 << 20));
  std::printf("%-44s %10s %10s %8s\n", "copy", "syncgrad", "memcpy", "ratio");
  const Tensor src = full({n}, 1.5, {.device = kCuda0});
  const Tensor dst = empty({n}, {.device = kCuda0});
  // `moved`: syncgrad's bytes by the same convention (the reference always moves `bytes`); the ratio is of times.
  auto row = [&](const char* what, const Pair& p, double moved) {
    std::printf("%-44s %10.0f %10.0f %7.0f%%\n", what, moved / p.ours / 1e9, bytes / p.reference / 1e9,
                100.0 * p.ratio);
  };
  auto memcpy_d2d = [&] {
    check(cudaMemcpy(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice),
          "cudaMemcpy");
  };
  row("device -> device, contiguous f32",
      time_pair(
          opt, 10, [&] { raw::copy_(dst, src); }, memcpy_d2d),
      bytes);
  const int64_t side = static_cast<int64_t>(1) << (opt.quick ? 13 : 14);  // side * side = n
  const Tensor square = raw::view(src, {side, side});
  const Tensor square_out = raw::view(dst, {side, side});
  row("device -> device, transposed f32 (copy kernel)",
      time_pair(
          opt, 10, [&] { raw::copy_(square_out, raw::transpose(square, 0, 1)); }, memcpy_d2d),
      bytes);
  const Tensor half_out = empty({n}, {.dtype = DType::bf16, .device = kCuda0});
  row("device -> device, f32 -> bf16 (copy kernel)",
      time_pair(
          opt, 10, [&] { raw::copy_(half_out, src); }, memcpy_d2d),
      bytes * 0.75);
  row("elementwise add f32 (3 streams of n)",
      time_pair(
          opt, 10, [&] { raw::add(src, src); }, memcpy_d2d),
      bytes * 1.5);
  const Tensor host = raw::to(src, kCPU);
  std::vector<float> host_buffer(static_cast<size_t>(n));
  row("host (pageable) -> device",
      time_pair(
          opt, 3, [&] { raw::copy_(dst, host); },
          [&] {
            check(cudaMemcpy(dst.data_ptr(), host_buffer.data(), static_cast<size_t>(bytes), cudaMemcpyHostToDevice),
                  "cudaMemcpy");
          }),
      bytes);
  row("device -> host (pageable)",
      time_pair(
          opt, 3, [&] { raw::copy_(host, dst); },
          [&] {
            check(cudaMemcpy(host_buffer.data(), dst.data_ptr(), static_cast<size_t>(bytes), cudaMemcpyDeviceToHost),
                  "cudaMemcpy");
          }),
      bytes);
}

// Seconds per training step of models::CNN on CUDA (SGD with momentum, a fixed random batch), over `steps`.
class CnnRun {
 public:
  explicit CnnRun(int batch)
      : gen_(0),
        model_(&gen_),
        x_(randn({batch, 1, 28, 28}, {.device = kCuda0}, &gen_)),
        y_(randint(0, 10, {batch}, {.dtype = DType::i64, .device = kCuda0}, &gen_)) {
    model_.to(kCuda0);
    optimizer_ = std::make_unique<optim::SGD>(model_.parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
    for (int i = 0; i < 10; ++i) step();
  }
  double seconds_per_step(int steps) {
    return seconds_per_call(steps, [&] { step(); });
  }

 private:
  void step() {
    Tensor loss = cross_entropy(model_.forward(x_), y_);
    optimizer_->zero_grad();
    loss.backward();
    optimizer_->step();
  }
  Generator gen_;
  models::CNN model_;
  Tensor x_, y_;
  std::unique_ptr<optim::SGD> optimizer_;
};

// PyTorch's milliseconds per step from bench/torch_cuda_cnn.py, or a negative value with `why` set.
double torch_ms_per_step(const Options& opt, int steps, int batch, std::string& why) {
  const std::string command = "python3 '" + opt.torch_script + "' --steps " + std::to_string(steps) + " --batch " +
                              std::to_string(batch) + (opt.tf32 ? " --tf32" : "") + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    why = "could not run python3";
    return -1;
  }
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  pclose(pipe);
  const size_t at = output.rfind("ms_per_step ");
  if (at == std::string::npos) {
    why = output.empty() ? "no output" : output.substr(0, output.find('\n'));
    return -1;
  }
  return std::stod(output.substr(at + 12));
}

void cnn_table(const Options& opt) {
  const int batch = 256, steps = opt.quick ? 20 : 50;
  std::printf(
      "\nCNN training step (models::CNN, batch %d, SGD momentum): ms/step, syncgrad vs PyTorch on this GPU "
      "(target: at least as fast)%s\n",
      batch, opt.tf32 ? ", float32 on TF32" : "");
  CnnRun run(batch);
  std::vector<double> ours, theirs, ratios;
  std::string why;
  for (int rep = 0; rep < std::max(3, opt.reps / 2); ++rep) {
    ours.push_back(1000 * run.seconds_per_step(steps));
    const double t = torch_ms_per_step(opt, steps, batch, why);
    if (t < 0) break;
    theirs.push_back(t);
    ratios.push_back(t / ours.back());
  }
  if (theirs.empty()) {
    std::printf("syncgrad %.3f ms/step; PyTorch unavailable (%s)\n", median(ours), why.c_str());
    return;
  }
  const double ratio = median(ratios);
  std::printf("syncgrad %.3f ms/step, PyTorch %.3f ms/step, PyTorch time / syncgrad time %.2f (%zu pairs): %s\n",
              median(ours), median(theirs), ratio, ratios.size(), ratio >= 1.0 ? "met" : "NOT MET");
}

}  // namespace

extern "C" int syncgrad_bench_cuda_main(int argc, char** argv) {
  Options opt;
  CLI::App app{"syncgrad-bench cuda: GEMM and copy figures of the CUDA backend beside cuBLAS and cudaMemcpy"};
  app.add_option("--reps", opt.reps, "samples per figure (median)")->check(syncgrad::cli::at_least(1));
  app.add_flag("--quick", opt.quick, "small sizes only");
  app.add_flag("--tf32", opt.tf32, "float32 GEMMs and convolutions on TF32 (sets SYNCGRAD_CUDA_ALLOW_TF32=1)");
  app.add_option("--torch-script", opt.torch_script, "the PyTorch peer of the CNN table");
  CLI11_PARSE(app, argc, argv);
  if (opt.tf32) setenv("SYNCGRAD_CUDA_ALLOW_TF32", "1", 1);
  if (!cuda_is_available()) {
    std::printf("syncgrad-bench cuda: skipped: %s\n", backend_unavailable_reason(DeviceType::kCUDA).c_str());
    return 0;
  }
  std::printf("syncgrad-bench cuda: %s\n", device_backend(DeviceType::kCUDA)->name().c_str());
  try {
    gemm_table(opt);
    copy_table(opt);
    cnn_table(opt);
  } catch (const Error& e) {
    std::fprintf(stderr, "syncgrad-bench cuda: %s\n", e.what());
    return 1;
  }
  return 0;
}
