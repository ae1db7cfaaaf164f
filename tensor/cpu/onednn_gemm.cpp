// oneDNN matmul primitives for float32 GEMMs, cached by shape, strides and accumulation.
#include "tensor/cpu/onednn_gemm.h"

#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace syncgrad::cpu {
namespace {

// Below this many multiply-adds the register-tiled kernels are as fast (a batch of 64 through 784 -> 256 is
// 12.8M) and a primitive's fixed cost (~2 us per call) weighs more.
constexpr int64_t kMinMultiplyAdds = int64_t{32} << 20;
// A row-major B with rows this long is read in place by oneDNN 2.6's matmul and ran at 55 GFLOP/s on a 12 x 768
// GPT's 3072 -> 768 layer (input and weight gradients) where Eigen, which packs B, ran at 86-101: Eigen's.
constexpr int64_t kMaxRowMajorB = 2048;
constexpr size_t kMaxCachedPrimitives = 512;

using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The primitive for `key`, created on first use; nullptr when oneDNN cannot run that layout.
std::shared_ptr<dnnl::matmul> primitive_for(const Key& key) {
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<dnnl::matmul>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kMaxCachedPrimitives) cache.clear();
  const auto [m, n, k, a_rows, a_cols, b_rows, b_cols, accumulate] = key;
  using desc = dnnl::memory::desc;
  const auto f32 = dnnl::memory::data_type::f32;
  std::shared_ptr<dnnl::matmul> primitive;
  try {
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      attr.set_post_ops(sum);
    }
    const desc a({m, k}, f32, {a_rows, a_cols}), b({k, n}, f32, {b_rows, b_cols}), c({m, n}, f32, {n, 1});
    primitive = std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr,
                                                                          cpu_engine()));
  } catch (const dnnl::error&) {
    primitive = nullptr;  // a layout oneDNN does not take (e.g. zero strides): the caller's own kernels run it
  }
  cache.emplace(key, primitive);
  return primitive;
}

}  // namespace

bool onednn_gemm_f32(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  if (out.dtype() != DType::f32 || out.dim() != 2 || !out.is_contiguous() || alpha.to_double() != 1.0) return false;
  const double beta_value = beta.to_double();
  if (beta_value != 0.0 && beta_value != 1.0) return false;
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  if (m * n * k < kMinMultiplyAdds || (b.stride(1) == 1 && b.stride(0) >= kMaxRowMajorB)) return false;
  const auto primitive =
      primitive_for({m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), beta_value == 1.0});
  if (!primitive) return false;
  const auto& engine = cpu_engine();
  thread_local dnnl::stream stream(engine);
  const auto f32 = dnnl::memory::data_type::f32;
  using desc = dnnl::memory::desc;
  dnnl::memory a_mem(desc({m, k}, f32, {a.stride(0), a.stride(1)}), engine, const_cast<float*>(a.data_ptr<float>()));
  dnnl::memory b_mem(desc({k, n}, f32, {b.stride(0), b.stride(1)}), engine, const_cast<float*>(b.data_ptr<float>()));
  dnnl::memory c_mem(desc({m, n}, f32, {n, 1}), engine, out.data_ptr<float>());
  primitive->execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
  stream.wait();
  return true;
}

}  // namespace syncgrad::cpu
