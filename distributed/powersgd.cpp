// The PowerSGD communication hook (Vogels et al., 2019, as in PyTorch): each gradient matrix M (n x m) of a
// bucket is sent as two thin factors P = M Q (n x r) and Q = M^T P (m x r) instead of n * m values; vectors
// and matrices that would not shrink enough are allreduced as they are. The part of M the approximation
// missed is kept (error feedback) and added to the next iteration's gradient; Q is reused (warm start). Both
// are kept per parameter, so they survive the rebuild of the buckets and a checkpoint (state_dict).
#include <cmath>
#include <map>
#include <regex>

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
  size_t parameter = 0;  // index among DDP's trainable parameters
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

// A compressed parameter's state outside a bucket: loaded from a checkpoint, or kept across a re-layout.
struct ParameterState {
  Tensor error;  // (n, m)
  Tensor q;      // (m, rank)
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

  // A joined rank's zero bucket would still carry its error-feedback memory, and the error it keeps assumes every
  // rank's gradient is divided by the group's size.
  void check_join() const override {
    throw ValueError("comm hook " + name() + " cannot run under DistributedDataParallel::join(): a rank that ran "
                     "out of inputs would still send its error-feedback memory with its zero gradients. Use the "
                     "allreduce, fp16 or bf16 hook with join(), or give every rank the same number of batches");
  }

  std::shared_ptr<Work> launch(ProcessGroup& group, GradBucket& bucket) override {
    BucketState& s = states_[bucket.index];
    const bool compress = bucket.iteration >= options_.start_iteration;
    // Laid out before `compressed` is set: a new layout starts from a fresh BucketState.
    if (compress && s.layout_buffer != bucket.buffer.data_ptr()) layout(s, bucket);
    s.compressed = compress;
    if (!s.compressed) return group.allreduce(bucket.buffer, ReduceOp::kSum);
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

  std::vector<std::pair<std::string, Tensor>> state_dict() const override {
    std::map<size_t, ParameterState> all = pending_;
    for (const auto& [index, s] : states_) {
      for (const Matrix& mat : s.matrices) all[mat.parameter] = {raw::clone(error_of(s, mat)), raw::clone(mat.q)};
    }
    std::vector<std::pair<std::string, Tensor>> state;
    for (const auto& [parameter, saved] : all) {
      state.emplace_back("param" + std::to_string(parameter) + ".error", saved.error);
      state.emplace_back("param" + std::to_string(parameter) + ".q", saved.q);
    }
    return state;
  }

  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state) override {
    static const std::regex key_form(R"(param(\d+)\.(error|q))");
    std::map<size_t, ParameterState> loaded;
    for (const auto& [key, value] : state) {
      std::smatch match;
      SYNCGRAD_CHECK(std::regex_match(key, match, key_form), ValueError, "comm hook ", name(), ": unknown state \"",
                     key, "\" (expected \"param<i>.error\" and \"param<i>.q\"; saved with another comm hook?)");
      ParameterState& entry = loaded[std::stoul(match[1].str())];
      (match[2].str() == "q" ? entry.q : entry.error) = raw::clone(value);
    }
    for (const auto& [parameter, entry] : loaded) {
      SYNCGRAD_CHECK(entry.error.defined() && entry.q.defined() && entry.error.dim() == 2 && entry.q.dim() == 2,
                     ValueError, "comm hook ", name(), ": the state of parameter ", parameter,
                     " needs a 2-d \"error\" and a 2-d \"q\"");
    }
    states_.clear();  // laid out again at the next reduction, from the loaded state
    pending_ = std::move(loaded);
  }

  void reset_state() override {
    states_.clear();
    pending_.clear();
  }

 private:
  static int64_t offset_in(const GradBucket& bucket, const Tensor& view) {
    return (static_cast<const char*>(view.data_ptr()) - static_cast<const char*>(bucket.buffer.data_ptr())) /
           static_cast<int64_t>(view.element_size());
  }
  // The part of the bucket's error feedback that belongs to `mat`, shaped like it.
  static Tensor error_of(const BucketState& s, const Matrix& mat) {
    const int64_t offset =
        (static_cast<const char*>(mat.m.data_ptr()) - static_cast<const char*>(s.layout_buffer)) /
        static_cast<int64_t>(mat.m.element_size());
    return raw::view(raw::narrow(s.error, 0, offset, mat.m.numel()), mat.m.sizes());
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
    for (const Matrix& mat : s.matrices) pending_[mat.parameter] = {raw::clone(error_of(s, mat)), raw::clone(mat.q)};
    s = BucketState{};
    s.layout_buffer = bucket.buffer.data_ptr();
    const DType dtype = bucket.buffer.dtype();
    s.error = zeros(bucket.buffer.sizes(), TensorOptions{dtype});
    int64_t vector_numel = 0, p_numel = 0, q_numel = 0;
    for (size_t slot = 0; slot < bucket.gradients.size(); ++slot) {
      const Tensor& g = bucket.gradients[slot];
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
      mat.parameter = bucket.parameters.at(slot);
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
    for (Matrix& mat : s.matrices) take_pending(s, mat);
  }

  // Continues `mat` from the state kept for its parameter, if any.
  void take_pending(BucketState& s, Matrix& mat) {
    const auto it = pending_.find(mat.parameter);
    if (it == pending_.end()) return;
    const ParameterState& saved = it->second;
    Tensor error = error_of(s, mat);
    SYNCGRAD_CHECK(saved.error.sizes() == error.sizes() && saved.q.sizes() == mat.q.sizes(), ValueError,
                   "comm hook ", name(), ": the state of parameter ", mat.parameter, " has error ",
                   shape_str(saved.error.sizes()), " and q ", shape_str(saved.q.sizes()), " but its gradient needs ",
                   shape_str(error.sizes()), " and ", shape_str(mat.q.sizes()),
                   " (saved with another model or matrix_approximation_rank?)");
    raw::copy_(error, saved.error);
    raw::copy_(mat.q, saved.q);
    pending_.erase(it);
  }


  PowerSGDOptions options_;
  std::map<size_t, BucketState> states_;
  std::map<size_t, ParameterState> pending_;  // by parameter, until its bucket is laid out
};

}  // namespace

std::shared_ptr<CommHook> powersgd_hook(const PowerSGDOptions& options) {
  return std::make_shared<PowerSGDHook>(options);
}

}  // namespace syncgrad::distributed
