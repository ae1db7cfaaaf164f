// CUDA reduction kernels: sum over any dims of a strided input (a block of threads or one thread per output),
// max/min with indices along one dim and their two backward scatters, and the row reductions var/std and
// logsumexp. Block reductions combine in a fixed order (parallel.cuh), so results are reproducible.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/parallel.cuh"
#include "tensor/cuda/reduce_kernels.h"

namespace syncgrad::cuda {
namespace {

// ---- sum ----

// out[i] (of dtype out_dtype) += value, computed in Acc.
template <class Acc>
__host__ __device__ __forceinline__ void add_into(void* out, DType out_dtype, int64_t i, Acc value) {
  switch (out_dtype) {
    case DType::f32: {
      float* p = static_cast<float*>(out) + i;
      *p = convert<float>(static_cast<Acc>(*p) + value);
      break;
    }
    case DType::f64: {
      double* p = static_cast<double*>(out) + i;
      *p = convert<double>(static_cast<Acc>(*p) + value);
      break;
    }
    case DType::f16: {
      __half* p = static_cast<__half*>(out) + i;
      *p = convert<__half>(static_cast<Acc>(op_value(*p)) + value);
      break;
    }
    case DType::bf16: {
      __nv_bfloat16* p = static_cast<__nv_bfloat16*>(out) + i;
      *p = convert<__nv_bfloat16>(static_cast<Acc>(op_value(*p)) + value);
      break;
    }
    case DType::i64: {
      int64_t* p = static_cast<int64_t*>(out) + i;
      *p = convert<int64_t>(static_cast<Acc>(*p) + value);
      break;
    }
    case DType::i32: {
      int32_t* p = static_cast<int32_t*>(out) + i;
      *p = convert<int32_t>(static_cast<Acc>(*p) + value);
      break;
    }
    case DType::u8: {
      uint8_t* p = static_cast<uint8_t*>(out) + i;
      *p = convert<uint8_t>(static_cast<Acc>(*p) + value);
      break;
    }
    case DType::boolean: break;
  }
}

template <class Acc, class In>
void sum_typed(DType out_dtype, void* out, const In* in, const Geometry<2>& kept, const Geometry<1>& reduced,
               SumStrategy strategy, cudaStream_t stream) {
  const int64_t count = reduced.numel;
  if (strategy == SumStrategy::block_per_output) {
    for_each_row(kept.numel, count, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t r) {
      const Offsets<2> at = offsets_at<2>(kept, r);
      const In* base = in + at.at[1];
      const Acc total = team.reduce(
          count, Acc(0), [&](int64_t c) { return convert<Acc>(base[offsets_at<1>(reduced, c).at[0]]); },
          [](Acc x, Acc y) { return x + y; });
      if (team.leader()) add_into<Acc>(out, out_dtype, at.at[0], total);
    });
  } else {
    for_each_index(kept.numel, stream, [=] SG_LAMBDA(int64_t r) {
      const Offsets<2> at = offsets_at<2>(kept, r);
      const In* base = in + at.at[1];
      Acc total = 0;
      for (int64_t c = 0; c < count; ++c) total += convert<Acc>(base[offsets_at<1>(reduced, c).at[0]]);
      add_into<Acc>(out, out_dtype, at.at[0], total);
    });
  }
}

// ---- max / min along one dim ----

// A candidate extremum: its value in opmath and its position along the reduced dim.
template <class M>
struct Candidate {
  M value;
  int64_t index;
};

// The better of two candidates, independent of argument order: NaN wins, then the larger (smaller) value,
// then the smaller index (the first extremum).
template <class M>
__host__ __device__ __forceinline__ Candidate<M> better(const Candidate<M>& a, const Candidate<M>& b, bool largest) {
  const bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
  if (a_nan || b_nan) {
    if (a_nan && b_nan) return a.index < b.index ? a : b;
    return a_nan ? a : b;
  }
  if (largest ? a.value > b.value : a.value < b.value) return a;
  if (largest ? b.value > a.value : b.value < a.value) return b;
  return a.index < b.index ? a : b;
}

template <class M>
M worst_value(bool largest) {
  using Limits = std::numeric_limits<M>;
  if constexpr (Limits::has_infinity) return largest ? -Limits::infinity() : Limits::infinity();
  else return largest ? Limits::lowest() : Limits::max();
}

template <class T>
void minmax_typed(T* values, int64_t* indices, const T* in, int64_t outer, int64_t size, int64_t inner, bool largest,
                  cudaStream_t stream) {
  using M = opmath_t<T>;
  using C = Candidate<M>;
  if (inner == 1) {
    // Never chosen over a real element: the worst value ties at worst, and then the larger index loses.
    const C none{worst_value<M>(largest), std::numeric_limits<int64_t>::max()};
    for_each_row(outer, size, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t o) {
      const T* row = in + o * size;
      const C best = team.reduce(
          size, none,
          [&](int64_t k) {
            return C{static_cast<M>(op_value(row[k])), k};
          },
          [largest](const C& a, const C& b) { return better(a, b, largest); });
      if (team.leader()) {
        values[o] = row[best.index];
        indices[o] = best.index;
      }
    });
    return;
  }
  for_each_index(outer * inner, stream, [=] SG_LAMBDA(int64_t j) {
    const int64_t o = j / inner, i = j % inner;
    const T* column = in + o * size * inner + i;
    C best{static_cast<M>(op_value(column[0])), 0};
    for (int64_t k = 1; k < size; ++k) best = better(best, C{static_cast<M>(op_value(column[k * inner])), k}, largest);
    values[j] = column[best.index * inner];
    indices[j] = best.index;
  });
}

template <class T>
void index_backward_typed(T* grad_in, const T* grad, const int64_t* indices, int64_t outer, int64_t size, int64_t inner,
                          cudaStream_t stream) {
  for_each_index(outer * inner, stream, [=] SG_LAMBDA(int64_t j) {
    const int64_t o = j / inner, i = j % inner;
    grad_in[(o * size + indices[j]) * inner + i] = grad[j];
  });
}

template <class T, class G>
void ties_backward_typed(G* grad_in, const T* in, int64_t n, const T* value, const G* grad, cudaStream_t stream) {
  using M = opmath_t<T>;
  using GM = opmath_t<G>;
  for_each_row(1, n, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t) {
    const M target = static_cast<M>(op_value(*value));
    auto tied = [&](int64_t i) {
      const M v = static_cast<M>(op_value(in[i]));
      return is_nan(target) ? is_nan(v) : v == target;
    };
    const int64_t count = team.reduce(
        n, int64_t{0}, [&](int64_t i) { return tied(i) ? int64_t{1} : int64_t{0}; },
        [](int64_t a, int64_t b) { return a + b; });
    const G share = convert<G>(static_cast<GM>(op_value(*grad)) / static_cast<GM>(count));
    team.for_each(n, [&](int64_t i) {
      if (tied(i)) grad_in[i] = share;
    });
  });
}

// ---- row reductions ----

template <class T>
void var_rows_typed(T* out, const T* in, int64_t rows, int64_t cols, int64_t correction, bool root,
                    cudaStream_t stream) {
  const double divisor = static_cast<double>(cols - correction > 0 ? cols - correction : 0);
  for_each_row(rows, cols, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t r) {
    const T* row = in + r * cols;
    auto plus = [](double a, double b) { return a + b; };
    auto at = [&](int64_t c) { return static_cast<double>(op_value(row[c])); };
    const double mean = team.reduce(cols, 0.0, at, plus) / static_cast<double>(cols);
    const double squares = team.reduce(
        cols, 0.0,
        [&](int64_t c) {
          const double d = at(c) - mean;
          return d * d;
        },
        plus);
    const double v = squares / divisor;
    if (team.leader()) out[r] = convert<T>(root ? dmath::sqrt(v) : v);
  });
}

// The larger of two values, ignoring NaN (as std::max over a row that starts at -inf does).
template <class M>
__host__ __device__ __forceinline__ M max_ignoring_nan(M a, M b) {
  return (is_nan(b) || a >= b) ? a : b;
}

template <class T>
void logsumexp_rows_typed(T* out, const T* in, int64_t rows, int64_t cols, cudaStream_t stream) {
  using M = opmath_t<T>;
  const M lowest = -infinity<M>();
  for_each_row(rows, cols, stream, [=] SG_LAMBDA(const RowTeam& team, int64_t r) {
    const T* row = in + r * cols;
    auto at = [&](int64_t c) { return static_cast<M>(op_value(row[c])); };
    const M top = team.reduce(cols, lowest, at, [](M a, M b) { return max_ignoring_nan(a, b); });
    // All -inf (or +inf somewhere): shifting by an infinity would give NaN; shift by 0 instead.
    const M shift = is_inf(top) ? M(0) : top;
    const M total = team.reduce(
        cols, M(0), [&](int64_t c) { return dmath::exp(at(c) - shift); }, [](M a, M b) { return a + b; });
    if (team.leader()) out[r] = convert<T>(dmath::log(total) + shift);
  });
}

// The accumulation type of a sum stored in `dtype`.
template <class F>
void visit_accumulator(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f64: f.template operator()<double>(); break;
    case DType::f32:
    case DType::f16:
    case DType::bf16: f.template operator()<float>(); break;
    default: f.template operator()<int64_t>(); break;
  }
}

}  // namespace

void launch_sum(DType out_dtype, DType in_dtype, void* out, const void* in, const Geometry<2>& kept,
                const Geometry<1>& reduced, SumStrategy strategy, cudaStream_t stream) {
  visit_accumulator(out_dtype, [&]<class Acc>() {
    visit_dtype(in_dtype, [&]<class In>() {
      sum_typed<Acc, In>(out_dtype, out, static_cast<const In*>(in), kept, reduced, strategy, stream);
    });
  });
}

void launch_minmax_dim(DType dtype, void* values, int64_t* indices, const void* in, int64_t outer, int64_t size,
                       int64_t inner, bool largest, cudaStream_t stream) {
  visit_dtype(dtype, [&]<class T>() {
    minmax_typed<T>(static_cast<T*>(values), indices, static_cast<const T*>(in), outer, size, inner, largest, stream);
  });
}

void launch_index_backward(DType dtype, void* grad_in, const void* grad, const int64_t* indices, int64_t outer,
                           int64_t size, int64_t inner, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    index_backward_typed<T>(static_cast<T*>(grad_in), static_cast<const T*>(grad), indices, outer, size, inner, stream);
  });
}

void launch_ties_backward(DType in_dtype, DType grad_dtype, void* grad_in, const void* in, int64_t n, const void* value,
                          const void* grad, cudaStream_t stream) {
  visit_dtype(in_dtype, [&]<class T>() {
    visit_floating(grad_dtype, [&]<class G>() {
      ties_backward_typed<T, G>(static_cast<G*>(grad_in), static_cast<const T*>(in), n, static_cast<const T*>(value),
                                static_cast<const G*>(grad), stream);
    });
  });
}

void launch_var_rows(DType dtype, void* out, const void* in, int64_t rows, int64_t cols, int64_t correction, bool root,
                     cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    var_rows_typed<T>(static_cast<T*>(out), static_cast<const T*>(in), rows, cols, correction, root, stream);
  });
}

void launch_logsumexp_rows(DType dtype, void* out, const void* in, int64_t rows, int64_t cols, cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    logsumexp_rows_typed<T>(static_cast<T*>(out), static_cast<const T*>(in), rows, cols, stream);
  });
}

}  // namespace syncgrad::cuda
