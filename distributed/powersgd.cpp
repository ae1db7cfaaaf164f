// The PowerSGD communication hook (Vogels et al., 2019, as in PyTorch): each gradient matrix M (n x m) of a
// bucket is sent as two thin factors P = M Q (n x r) and Q = M^T P (m x r) instead of n * m values; vectors
// and matrices that would not shrink enough are allreduced as they are. The part of M the approximation
// missed is kept (error feedback) and added to the next iteration's gradient; Q is reused (warm start).
#include <cmath>
#include <map>

#include "distributed/comm_hook.h"
#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/generator.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/views.h"

namespace syncgrad::distributed {

namespace {

// Gram-Schmidt on the columns of a contiguous (n, r) matrix, in place.
template <class T>
void orthonormalize_columns(T* p, int64_t n, int64_t r) {
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < i; ++j) {
      double dot = 0;
      for (int64_t k = 0; k < n; ++k) dot += double(p[k * r + i]) * double(p[k * r + j]);
      for (int64_t k = 0; k < n; ++k) p[k * r + i] -= static_cast<T>(dot * double(p[k * r + j]));
    }
    double norm = 0;
    for (int64_t k = 0; k < n; ++k) norm += double(p[k * r + i]) * double(p[k * r + i]);
    const double scale = 1.0 / (std::sqrt(norm) + 1e-8);
    for (int64_t k = 0; k < n; ++k) p[k * r + i] = static_cast<T>(double(p[k * r + i]) * scale);
  }
}

void orthonormalize(const Tensor& p) {
  if (p.dtype() == DType::f64) return orthonormalize_columns(p.data_ptr<double>(), p.size(0), p.size(1));
  orthonormalize_columns(p.data_ptr<float>(), p.size(0), p.size(1));
}

struct Matrix {
  Tensor m;  // (n, m) view into the bucket buffer
  int64_t rank = 1;
  Tensor q;  // (m, rank), kept across iterations for the warm start
  int64_t p_offset = 0, q_offset = 0;
};

struct BucketState {
  Tensor error;                 // error feedback, shaped like the buffer
  std::vector<Tensor> vectors;  // views sent uncompressed
  std::vector<Matrix> matrices;
  Tensor flat_vectors, flat_p, flat_q;
  std::shared_ptr<Work> vectors_work;
  bool compressed = false;  // this iteration used PowerSGD
  const void* layout_buffer = nullptr;  // the buffer the layout was made for (buckets are rebuilt once)
};

class PowerSGDHook : public CommHook {
 public:
  explicit PowerSGDHook(const PowerSGDOptions& options) : options_(options) {
    SYNCGRAD_CHECK(options.matrix_approximation_rank >= 1, ValueError,
                   "powersgd: matrix_approximation_rank must be >= 1, got ", options.matrix_approximation_rank);
  }
  std::string name() const override { return "powersgd:" + std::to_string(options_.matrix_approximation_rank); }

  // The factors are computed and orthonormalised on the host (orthonormalize_columns), in float32 or float64.
  void check_bucket(DType dtype, const Device& device) const override {
    if (!device.is_cpu()) {
      throw DeviceError("comm hook " + name() + ": PowerSGD runs on CPU buckets only, got a bucket on " +
                        device.str() + "; use the allreduce, fp16 or bf16 hook for CUDA gradients");
    }
    if (dtype != DType::f32 && dtype != DType::f64) {
      throw DTypeError("comm hook " + name() + ": PowerSGD compresses float32 or float64 buckets only, got a " +
                       std::string(dtype_name(dtype)) + " bucket; use the allreduce, fp16 or bf16 hook, or keep " +
                       "the parameters float32 (autocast keeps them float32)");
    }
  }

  std::shared_ptr<Work> launch(ProcessGroup& group, GradBucket& bucket) override {
    BucketState& s = states_[bucket.index];
    s.compressed = bucket.iteration >= options_.start_iteration;
    if (!s.compressed) return group.allreduce(bucket.buffer, ReduceOp::kSum);
    if (s.layout_buffer != bucket.buffer.data_ptr()) layout(s, bucket);
    if (options_.use_error_feedback) raw::add_(bucket.buffer, s.error);
    for (size_t i = 0, offset = 0; i < s.vectors.size(); ++i) {
      raw::copy_(raw::narrow(s.flat_vectors, 0, offset, s.vectors[i].numel()), raw::flatten(s.vectors[i]));
      offset += s.vectors[i].numel();
    }
    if (s.flat_vectors.numel() > 0) s.vectors_work = group.allreduce(s.flat_vectors, ReduceOp::kSum);
    if (!options_.warm_start) fresh_q(s, bucket.index, bucket.iteration);
    for (Matrix& mat : s.matrices) raw::copy_(p_view(s, mat), raw::mm(mat.m, mat.q));
    return group.allreduce(s.flat_p, ReduceOp::kSum);
  }

  void finish(ProcessGroup& group, GradBucket& bucket) override {
    BucketState& s = states_[bucket.index];
    if (!s.compressed) return;
    if (s.vectors_work) s.vectors_work->wait();
    for (size_t i = 0, offset = 0; i < s.vectors.size(); ++i) {
      raw::copy_(s.vectors[i], raw::view(raw::narrow(s.flat_vectors, 0, offset, s.vectors[i].numel()),
                                         s.vectors[i].sizes()));
      offset += s.vectors[i].numel();
    }
    for (Matrix& mat : s.matrices) {
      Tensor p = p_view(s, mat);
      orthonormalize(p);
      raw::copy_(q_view(s, mat), raw::mm(raw::transpose(mat.m, 0, 1), p));
    }
    if (!s.matrices.empty()) group.allreduce(s.flat_q, ReduceOp::kSum)->wait();
    for (Matrix& mat : s.matrices) {
      Tensor q = q_view(s, mat);
      raw::copy_(mat.q, q);
      Tensor approximation = raw::mm(p_view(s, mat), raw::transpose(q, 0, 1));
      if (options_.use_error_feedback) {
        // This rank's input is its gradient / world size and the approximation stands for the sum of all
        // ranks' inputs, so this rank's share of what was missed is input - approximation / world size.
        Tensor error = raw::view(raw::narrow(s.error, 0, offset_in(bucket, mat.m), mat.m.numel()), mat.m.sizes());
        raw::copy_(error, raw::sub(mat.m, raw::div(approximation, Scalar(double(group.size())))));
      }
      raw::copy_(mat.m, approximation);
    }
  }

 private:
  static int64_t offset_in(const GradBucket& bucket, const Tensor& view) {
    return (static_cast<const char*>(view.data_ptr()) - static_cast<const char*>(bucket.buffer.data_ptr())) /
           static_cast<int64_t>(view.element_size());
  }
  static Tensor p_view(BucketState& s, const Matrix& mat) {
    return raw::view(raw::narrow(s.flat_p, 0, mat.p_offset, mat.m.size(0) * mat.rank), {mat.m.size(0), mat.rank});
  }
  static Tensor q_view(BucketState& s, const Matrix& mat) {
    return raw::view(raw::narrow(s.flat_q, 0, mat.q_offset, mat.m.size(1) * mat.rank), {mat.m.size(1), mat.rank});
  }

  void fresh_q(BucketState& s, size_t bucket_index, int64_t iteration) {
    Generator gen(options_.seed + 1000003ull * bucket_index + static_cast<uint64_t>(iteration));
    for (Matrix& mat : s.matrices) {
      raw::copy_(mat.q, randn(mat.q.sizes(), TensorOptions{mat.q.dtype()}, &gen));
    }
  }

  // Splits the bucket into vectors and compressible matrices and allocates the exchange buffers.
  void layout(BucketState& s, const GradBucket& bucket) {
    s = BucketState{};
    s.layout_buffer = bucket.buffer.data_ptr();
    const DType dtype = bucket.buffer.dtype();
    s.error = zeros(bucket.buffer.sizes(), TensorOptions{dtype});
    int64_t vector_numel = 0, p_numel = 0, q_numel = 0;
    for (const Tensor& g : bucket.gradients) {
      const int64_t n = g.dim() >= 2 ? g.size(0) : 1;
      const int64_t m = g.numel() / std::max<int64_t>(n, 1);
      const int64_t r = std::min<int64_t>({options_.matrix_approximation_rank, n, m});
      const bool compress =
          g.dim() >= 2 && double(n) * double(m) >= options_.min_compression_rate * double(r) * double(n + m);
      if (!compress) {
        s.vectors.push_back(g);
        vector_numel += g.numel();
        continue;
      }
      Matrix mat;
      mat.m = raw::view(g, {n, m});
      mat.rank = r;
      mat.p_offset = p_numel;
      mat.q_offset = q_numel;
      p_numel += n * r;
      q_numel += m * r;
      s.matrices.push_back(std::move(mat));
    }
    s.flat_vectors = zeros({vector_numel}, TensorOptions{dtype});
    s.flat_p = zeros({p_numel}, TensorOptions{dtype});
    s.flat_q = zeros({q_numel}, TensorOptions{dtype});
    for (Matrix& mat : s.matrices) mat.q = zeros({mat.m.size(1), mat.rank}, TensorOptions{dtype});
    fresh_q(s, bucket.index, 0);
  }

  PowerSGDOptions options_;
  std::map<size_t, BucketState> states_;
};

}  // namespace

std::shared_ptr<CommHook> powersgd_hook(const PowerSGDOptions& options) {
  return std::make_shared<PowerSGDHook>(options);
}

}  // namespace syncgrad::distributed
