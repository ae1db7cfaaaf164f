// CPU conv2d kernels: im2col + GEMM (Eigen) per image and group, with one column buffer per worker reused
// across its images so it stays in cache. Backward: grad_input = col2im(W^T * grad_out), grad_weight =
// sum over images of grad_out * col^T. 1x1 kernels with stride 1 and no padding use the input as the columns.
// float32 and float64 run natively; float16/bfloat16 are converted to float32 and back.
#include <Eigen/Core>
#include <algorithm>
#include <functional>
#include <mutex>

#include "tensor/cpu/visit.h"
#include "tensor/cpu/window.h"
#include "tensor/ops/conv.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

template <class T> using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T> using MatrixMap = Eigen::Map<RowMatrix<T>>;
template <class T> using ConstMatrixMap = Eigen::Map<const RowMatrix<T>>;
template <class T> using VectorMap = Eigen::Map<Eigen::Vector<T, Eigen::Dynamic>>;
template <class T> using ConstVectorMap = Eigen::Map<const Eigen::Vector<T, Eigen::Dynamic>>;

// Sizes of one convolution, per group where it matters.
struct ConvShape {
  int64_t batch, c_in, h, w;      // input (N, C_in, H, W)
  int64_t c_out, kh, kw;          // weight (C_out, C_in / groups, kH, kW)
  int64_t oh, ow;                 // output (N, C_out, OH, OW)
  int64_t groups;
  Conv2dParams p;

  int64_t c_in_group() const { return c_in / groups; }
  int64_t c_out_group() const { return c_out / groups; }
  int64_t col_rows() const { return c_in_group() * kh * kw; }  // K of the GEMMs
  int64_t out_plane() const { return oh * ow; }                // P of the GEMMs
  int64_t in_plane() const { return h * w; }
  // A 1x1 kernel with stride 1 and no padding: the input plane block already is the column matrix.
  bool input_is_col() const {
    return kh == 1 && kw == 1 && p.stride == Size2(1) && p.padding == Size2(0);
  }
};

ConvShape conv_shape(const Shape& input, const Shape& weight, const Shape& out, const Conv2dParams& p) {
  return {input[0], input[1], input[2], input[3], weight[0], weight[2], weight[3], out[2], out[3], p.groups, p};
}

// col (C_in_g * kH * kW, OH * OW) <- the receptive fields of one image's group planes src (C_in_g, H, W).
template <class T>
void im2col(const T* src, T* col, const ConvShape& s) {
  const int64_t sh = s.p.stride.h, sw = s.p.stride.w;
  for (int64_t c = 0; c < s.c_in_group(); ++c) {
    const T* plane = src + c * s.in_plane();
    for (int64_t ki = 0; ki < s.kh; ++ki) {
      for (int64_t kj = 0; kj < s.kw; ++kj) {
        T* row = col + ((c * s.kh + ki) * s.kw + kj) * s.out_plane();
        const int64_t x0 = kj * s.p.dilation.w - s.p.padding.w;
        const auto [lo, hi] = valid_range(x0, sw, s.w, s.ow);
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          T* out = row + oy * s.ow;
          const int64_t iy = oy * sh - s.p.padding.h + ki * s.p.dilation.h;
          if (iy < 0 || iy >= s.h) {
            std::fill(out, out + s.ow, T(0));
            continue;
          }
          const T* in = plane + iy * s.w;
          std::fill(out, out + lo, T(0));
          if (sw == 1) {
            std::copy(in + lo + x0, in + hi + x0, out + lo);
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) out[ox] = in[ox * sw + x0];
          }
          std::fill(out + hi, out + s.ow, T(0));
        }
      }
    }
  }
}

// dst (C_in_g, H, W) += the column matrix col (C_in_g * kH * kW, OH * OW) folded back onto the input planes.
template <class T>
void col2im_add(const T* col, T* dst, const ConvShape& s) {
  const int64_t sh = s.p.stride.h, sw = s.p.stride.w;
  for (int64_t c = 0; c < s.c_in_group(); ++c) {
    T* plane = dst + c * s.in_plane();
    for (int64_t ki = 0; ki < s.kh; ++ki) {
      for (int64_t kj = 0; kj < s.kw; ++kj) {
        const T* row = col + ((c * s.kh + ki) * s.kw + kj) * s.out_plane();
        const int64_t x0 = kj * s.p.dilation.w - s.p.padding.w;
        const auto [lo, hi] = valid_range(x0, sw, s.w, s.ow);
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          const int64_t iy = oy * sh - s.p.padding.h + ki * s.p.dilation.h;
          if (iy < 0 || iy >= s.h) continue;
          const T* in = row + oy * s.ow;
          T* out = plane + iy * s.w;
          if (sw == 1) {
            VectorMap<T>(out + lo + x0, hi - lo) += ConstVectorMap<T>(in + lo, hi - lo);
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) out[ox * sw + x0] += in[ox];
          }
        }
      }
    }
  }
}

// Runs body(first_image, last_image) over the batch: split across the intra-op threads when there are several.
void for_images(int64_t batch, const std::function<void(int64_t, int64_t)>& body) {
  if (get_num_threads() > 1) {
    parallel_for(batch, 1, body);
  } else {
    body(0, batch);
  }
}

template <class T>
Tensor column_buffer(const ConvShape& s) {
  return empty({s.col_rows(), s.out_plane()}, {.dtype = dtype_of<T>()});
}

template <class T>
void forward(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvShape& s) {
  const T* x = input.data_ptr<T>();
  const T* wt = weight.data_ptr<T>();
  const T* b = bias.defined() ? bias.data_ptr<T>() : nullptr;
  T* y = out.data_ptr<T>();
  const int64_t k = s.col_rows(), p = s.out_plane(), cog = s.c_out_group();
  for_images(s.batch, [&](int64_t first, int64_t last) {
    Tensor buffer = s.input_is_col() ? Tensor() : column_buffer<T>(s);
    for (int64_t n = first; n < last; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const T* src = x + (n * s.c_in + g * s.c_in_group()) * s.in_plane();
        const T* col = src;
        if (!s.input_is_col()) {
          im2col(src, buffer.data_ptr<T>(), s);
          col = buffer.data_ptr<T>();
        }
        MatrixMap<T> y_g(y + (n * s.c_out + g * cog) * p, cog, p);  // (C_out_g, OH * OW)
        y_g.noalias() = ConstMatrixMap<T>(wt + g * cog * k, cog, k) * ConstMatrixMap<T>(col, k, p);
        if (b != nullptr) y_g.colwise() += ConstVectorMap<T>(b + g * cog, cog);
      }
    }
  });
}

template <class T>
void backward_input(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight, const ConvShape& s) {
  const T* gy = grad_out.data_ptr<T>();
  const T* wt = weight.data_ptr<T>();
  T* gx = grad_input.data_ptr<T>();
  const int64_t k = s.col_rows(), p = s.out_plane(), cog = s.c_out_group();
  for_images(s.batch, [&](int64_t first, int64_t last) {
    Tensor buffer = s.input_is_col() ? Tensor() : column_buffer<T>(s);
    for (int64_t n = first; n < last; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        T* dst = gx + (n * s.c_in + g * s.c_in_group()) * s.in_plane();
        T* col = s.input_is_col() ? dst : buffer.data_ptr<T>();
        MatrixMap<T>(col, k, p).noalias() = ConstMatrixMap<T>(wt + g * cog * k, cog, k).transpose() *
                                            ConstMatrixMap<T>(gy + (n * s.c_out + g * cog) * p, cog, p);
        if (!s.input_is_col()) {
          std::fill(dst, dst + s.c_in_group() * s.in_plane(), T(0));
          col2im_add(col, dst, s);
        }
      }
    }
  });
}

template <class T>
void backward_weight(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input, const ConvShape& s) {
  const T* gy = grad_out.data_ptr<T>();
  const T* x = input.data_ptr<T>();
  const int64_t k = s.col_rows(), p = s.out_plane(), cog = s.c_out_group();
  MatrixMap<T> total(grad_weight.data_ptr<T>(), s.c_out, k);  // (C_out, C_in_g * kH * kW)
  total.setZero();
  std::mutex merge;
  for_images(s.batch, [&](int64_t first, int64_t last) {
    Tensor buffer = s.input_is_col() ? Tensor() : column_buffer<T>(s);
    RowMatrix<T> partial = RowMatrix<T>::Zero(s.c_out, k);
    for (int64_t n = first; n < last; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const T* src = x + (n * s.c_in + g * s.c_in_group()) * s.in_plane();
        const T* col = src;
        if (!s.input_is_col()) {
          im2col(src, buffer.data_ptr<T>(), s);
          col = buffer.data_ptr<T>();
        }
        partial.middleRows(g * cog, cog).noalias() +=
            ConstMatrixMap<T>(gy + (n * s.c_out + g * cog) * p, cog, p) * ConstMatrixMap<T>(col, k, p).transpose();
      }
    }
    std::lock_guard<std::mutex> lock(merge);
    total += partial;
  });
}

// Calls run<T>(result, operands) with T = float or double; half types run on float32 copies of the operands
// and the float32 result is converted into `result`.
template <class Run>
void dispatch(const char* op, const Tensor& result, std::initializer_list<Tensor> operands, Run run) {
  visit_floating(result.dtype(), op, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      run.template operator()<T>(result, std::vector<Tensor>(operands));
    } else {
      std::vector<Tensor> converted;
      for (const Tensor& t : operands) converted.push_back(t.defined() ? raw::to(t, DType::f32) : Tensor());
      Tensor result_f32 = empty(result.sizes(), {.dtype = DType::f32});
      run.template operator()<float>(result_f32, converted);
      raw::copy_(result, result_f32);
    }
  });
}

void conv2d_kernel(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const Conv2dParams& params) {
  const ConvShape s = conv_shape(input.sizes(), weight.sizes(), out.sizes(), params);
  dispatch("conv2d", out, {input, weight, bias}, [&]<class T>(const Tensor& y, const std::vector<Tensor>& in) {
    forward<T>(y, in[0], in[1], in[2], s);
  });
}

void conv2d_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight,
                                  const Conv2dParams& params) {
  const ConvShape s = conv_shape(grad_input.sizes(), weight.sizes(), grad_out.sizes(), params);
  dispatch("conv2d_backward", grad_input, {grad_out, weight},
           [&]<class T>(const Tensor& gx, const std::vector<Tensor>& in) { backward_input<T>(gx, in[0], in[1], s); });
}

void conv2d_backward_weight_kernel(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input,
                                   const Conv2dParams& params) {
  const ConvShape s = conv_shape(input.sizes(), grad_weight.sizes(), grad_out.sizes(), params);
  dispatch("conv2d_backward", grad_weight, {grad_out, input},
           [&]<class T>(const Tensor& gw, const std::vector<Tensor>& in) { backward_weight<T>(gw, in[0], in[1], s); });
}

const KernelRegistrar reg_conv2d(kernels::conv2d, DeviceType::kCPU, &conv2d_kernel);
const KernelRegistrar reg_conv2d_backward_input(kernels::conv2d_backward_input, DeviceType::kCPU,
                                                &conv2d_backward_input_kernel);
const KernelRegistrar reg_conv2d_backward_weight(kernels::conv2d_backward_weight, DeviceType::kCPU,
                                                 &conv2d_backward_weight_kernel);

}  // namespace
}  // namespace syncgrad::cpu
