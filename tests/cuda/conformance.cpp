// Helpers of the CUDA conformance suite: random inputs, layouts, tolerant comparisons, op and gradient checks.
#include "tests/cuda/conformance.h"

#include <cmath>
#include <sstream>

namespace syncgrad::cudatest {

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::contiguous: return "contiguous";
    case Layout::transposed: return "transposed";
    case Layout::strided: return "strided";
  }
  return "?";
}

Tensor random_values(const Shape& shape, DType dtype, uint64_t seed, double scale) {
  Generator gen(seed);
  if (is_floating(dtype)) return raw::to(raw::mul(randn(shape, {.dtype = DType::f64}, &gen), scale), dtype);
  if (dtype == DType::boolean) return raw::to(randint(0, 2, shape, {.dtype = DType::i64}, &gen), dtype);
  if (dtype == DType::u8) return raw::to(randint(0, 10, shape, {.dtype = DType::i64}, &gen), dtype);
  return raw::to(randint(-5, 5, shape, {.dtype = DType::i64}, &gen), dtype);
}

Tensor place(const Tensor& values, Device device, Layout layout) {
  const int64_t nd = values.dim();
  if (layout == Layout::transposed && nd >= 2) {
    Tensor stored = raw::contiguous(raw::transpose(values, nd - 2, nd - 1));
    return raw::transpose(raw::to(stored, device), nd - 2, nd - 1);
  }
  if (layout == Layout::strided && nd >= 1) {
    Shape wide = values.sizes();
    wide.back() *= 2;
    Tensor buffer = zeros(wide, {.dtype = values.dtype(), .device = device});
    Tensor view = raw::slice(buffer, nd - 1, 0, wide.back(), 2);
    raw::copy_(view, values);
    return view;
  }
  return raw::contiguous(raw::to(values, device));
}

Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::f32: return {1e-5, 1e-6};
    case DType::f64: return {1e-10, 1e-12};
    case DType::f16: return {4e-3, 1e-3};
    case DType::bf16: return {3e-2, 1e-2};
    default: return {0, 0};
  }
}

std::string mismatch(const Tensor& gpu, const Tensor& cpu, Tolerance tol) {
  std::ostringstream out;
  if (!gpu.defined() || !cpu.defined()) {
    return gpu.defined() == cpu.defined() ? "" : "one result is undefined";
  }
  if (gpu.sizes() != cpu.sizes() || gpu.dtype() != cpu.dtype()) {
    out << "result " << shape_str(gpu.sizes()) << " " << dtype_name(gpu.dtype()) << " vs CPU " << shape_str(cpu.sizes())
        << " " << dtype_name(cpu.dtype());
    return out.str();
  }
  const std::vector<double> g = to_vector<double>(raw::to(gpu, DType::f64));
  const std::vector<double> c = to_vector<double>(raw::to(cpu, DType::f64));
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(c[i])) continue;
    const bool same_inf = std::isinf(c[i]) && g[i] == c[i];
    if (same_inf || std::abs(g[i] - c[i]) <= tol.abs + tol.rel * std::abs(c[i])) continue;
    if (bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  out << bad << " of " << c.size() << " elements differ; first at flat index " << first << ": CUDA " << g[first]
      << " vs CPU " << c[first] << " (" << dtype_name(cpu.dtype()) << ", rel " << tol.rel << ", abs " << tol.abs << ")";
  return out.str();
}

Tensor check_op(const std::string& what, const std::vector<Tensor>& inputs, const Op& op, Layout layout,
                Tolerance tol) {
  // Copies on both devices: ops may write into their inputs.
  std::vector<Tensor> on_cpu, on_cuda;
  for (const Tensor& t : inputs) {
    on_cpu.push_back(raw::clone(t));
    on_cuda.push_back(place(t, kCuda0, layout));
  }
  const Tensor expected = op(on_cpu);
  const Tensor result = op(on_cuda);
  INFO(what << " (" << layout_name(layout) << " inputs)");
  CHECK(result.device() == kCuda0);
  CHECK_EMPTY(mismatch(result, expected, tol));
  return result;
}

void check_grad(const std::string& what, const std::vector<Tensor>& inputs, const Op& op, Tolerance tol,
                std::vector<bool> differentiable) {
  if (differentiable.empty()) {
    for (const Tensor& t : inputs) differentiable.push_back(is_floating(t.dtype()));
  }
  auto run = [&](Device device, std::vector<Tensor>& leaves) {
    std::vector<Tensor> args;
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor leaf = raw::clone(place(inputs[i], device));  // a fresh leaf, never the caller's tensor
      if (differentiable[i]) leaf.requires_grad_(true);
      leaves.push_back(leaf);
      args.push_back(leaf);
    }
    Tensor out = op(args);
    const Tensor weights = place(random_values(out.sizes(), out.dtype(), 99), device);
    sum(mul(out, weights)).backward();
    return out.detach();
  };
  std::vector<Tensor> cpu_leaves, cuda_leaves;
  const Tensor expected = run(kCPU, cpu_leaves);
  const Tensor result = run(kCuda0, cuda_leaves);
  INFO(what);
  CHECK_EMPTY(mismatch(result, expected, tol));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!differentiable[i]) continue;
    INFO("gradient of input " << i);
    CHECK(cuda_leaves[i].grad().defined());
    CHECK_EMPTY(mismatch(cuda_leaves[i].grad(), cpu_leaves[i].grad(), tol));
  }
}

}  // namespace syncgrad::cudatest
