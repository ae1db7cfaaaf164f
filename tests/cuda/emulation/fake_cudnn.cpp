// A host-memory stand-in for the cuDNN calls of the CUDA convolution (tensor/cuda/conv_ops.cpp, dnn.cpp), so
// the emulated module (test fixture only, never installed) runs the convolution glue, its descriptors,
// algorithm choice and workspaces included, without a GPU: direct NCHW cross-correlation loops with cuDNN's
// argument conventions (padding, stride, dilation, groups; y = alpha * op + beta * y), accumulating in float
// (double for double data). The "heuristics" offer one algorithm per pass, with a small workspace.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>

#include <cstring>
#include <vector>

struct cudnnContext {
  cudaStream_t stream = nullptr;
};
struct cudnnTensorStruct {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int n = 0, c = 0, h = 0, w = 0;
};
struct cudnnFilterStruct {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int k = 0, c = 0, h = 0, w = 0;
};
struct cudnnConvolutionStruct {
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

namespace {

constexpr size_t kFakeWorkspace = 256;  // every algorithm "needs" this much, so the glue's workspace path runs

double load(const void* p, cudnnDataType_t type, size_t i) {
  switch (type) {
    case CUDNN_DATA_DOUBLE: return static_cast<const double*>(p)[i];
    case CUDNN_DATA_HALF: return __half2float(static_cast<const __half*>(p)[i]);
    case CUDNN_DATA_BFLOAT16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

void store(void* p, cudnnDataType_t type, size_t i, double v) {
  switch (type) {
    case CUDNN_DATA_DOUBLE: static_cast<double*>(p)[i] = v; break;
    case CUDNN_DATA_HALF: static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v)); break;
    case CUDNN_DATA_BFLOAT16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v)); break;
    default: static_cast<float*>(p)[i] = static_cast<float>(v); break;
  }
}

// Rounds an accumulated value the way the accumulation type would hold it.
double accumulate_as(cudnnDataType_t type, double v) { return type == CUDNN_DATA_DOUBLE ? v : static_cast<float>(v); }

double scale_of(const void* s, cudnnDataType_t type) {
  return type == CUDNN_DATA_DOUBLE ? *static_cast<const double*>(s) : *static_cast<const float*>(s);
}

bool shapes_fit(const cudnnTensorStruct& x, const cudnnFilterStruct& w, const cudnnConvolutionStruct& c,
                const cudnnTensorStruct& y) {
  if (c.groups < 1 || x.c != w.c * c.groups || w.k % c.groups != 0 || y.c != w.k || y.n != x.n) return false;
  const int oh = (x.h + 2 * c.pad_h - c.dilation_h * (w.h - 1) - 1) / c.stride_h + 1;
  const int ow = (x.w + 2 * c.pad_w - c.dilation_w * (w.w - 1) - 1) / c.stride_w + 1;
  return y.h == oh && y.w == ow && x.type == w.type && x.type == y.type;
}

// Calls visit(x index, w index, y index) for every multiply-add of the convolution.
template <class Visit>
void for_each_tap(const cudnnTensorStruct& x, const cudnnFilterStruct& w, const cudnnConvolutionStruct& c,
                  const cudnnTensorStruct& y, Visit visit) {
  const int out_per_group = w.k / c.groups;
  for (int n = 0; n < y.n; ++n) {
    for (int k = 0; k < y.c; ++k) {
      const int g = k / out_per_group;
      for (int oy = 0; oy < y.h; ++oy) {
        for (int ox = 0; ox < y.w; ++ox) {
          const size_t yi = ((static_cast<size_t>(n) * y.c + k) * y.h + oy) * y.w + ox;
          for (int ci = 0; ci < w.c; ++ci) {
            const int channel = g * w.c + ci;
            for (int ky = 0; ky < w.h; ++ky) {
              const int iy = oy * c.stride_h - c.pad_h + ky * c.dilation_h;
              if (iy < 0 || iy >= x.h) continue;
              for (int kx = 0; kx < w.w; ++kx) {
                const int ix = ox * c.stride_w - c.pad_w + kx * c.dilation_w;
                if (ix < 0 || ix >= x.w) continue;
                const size_t xi = ((static_cast<size_t>(n) * x.c + channel) * x.h + iy) * x.w + ix;
                const size_t wi = ((static_cast<size_t>(k) * w.c + ci) * w.h + ky) * w.w + kx;
                visit(xi, wi, yi);
              }
            }
          }
        }
      }
    }
  }
}

// out = alpha * sums + beta * out over `count` elements.
void blend(void* out, cudnnDataType_t type, const std::vector<double>& sums, const void* alpha, const void* beta) {
  const double a = scale_of(alpha, type), b = scale_of(beta, type);
  for (size_t i = 0; i < sums.size(); ++i) {
    const double old = b == 0.0 ? 0.0 : load(out, type, i);
    store(out, type, i, a * accumulate_as(type, sums[i]) + b * old);
  }
}

template <class Perf, class Algo>
void one_candidate(int* returned, Perf* perfs, Algo algo, cudnnMathType_t math) {
  std::memset(perfs, 0, sizeof(Perf));
  perfs[0].algo = algo;
  perfs[0].status = CUDNN_STATUS_SUCCESS;
  perfs[0].memory = kFakeWorkspace;
  perfs[0].mathType = math;
  *returned = 1;
}

}  // namespace

extern "C" {

const char* cudnnGetErrorString(cudnnStatus_t status) {
  return status == CUDNN_STATUS_SUCCESS ? "CUDNN_STATUS_SUCCESS" : "CUDNN_STATUS_BAD_PARAM (emulated)";
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  *handle = new cudnnContext();
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  *d = new cudnnTensorStruct();
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  *d = new cudnnFilterStruct();
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  *d = new cudnnConvolutionStruct();
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format, cudnnDataType_t type,
                                         int n, int c, int h, int w) {
  if (format != CUDNN_TENSOR_NCHW || n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  *d = {type, n, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w) {
  if (format != CUDNN_TENSOR_NCHW || k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  *d = {type, k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w, int u, int v,
                                              int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t) {
  if (mode != CUDNN_CROSS_CORRELATION || pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dilation_h <= 0 ||
      dilation_w <= 0) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  d->pad_h = pad_h;
  d->pad_w = pad_w;
  d->stride_h = u;
  d->stride_w = v;
  d->dilation_h = dilation_h;
  d->dilation_w = dilation_w;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (groups < 1) return CUDNN_STATUS_BAD_PARAM;
  d->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  d->math = math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t* math) {
  *math = d->math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t x,
                                                     const cudnnFilterDescriptor_t w,
                                                     const cudnnConvolutionDescriptor_t c,
                                                     const cudnnTensorDescriptor_t y, const int requested,
                                                     int* returned, cudnnConvolutionFwdAlgoPerf_t* perfs) {
  if (requested < 1 || !shapes_fit(*x, *w, *c, *y)) return CUDNN_STATUS_BAD_PARAM;
  one_candidate(returned, perfs, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, c->math);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t, const cudnnFilterDescriptor_t w,
                                                          const cudnnTensorDescriptor_t dy,
                                                          const cudnnConvolutionDescriptor_t c,
                                                          const cudnnTensorDescriptor_t dx, const int requested,
                                                          int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perfs) {
  if (requested < 1 || !shapes_fit(*dx, *w, *c, *dy)) return CUDNN_STATUS_BAD_PARAM;
  one_candidate(returned, perfs, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, c->math);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t x,
                                                            const cudnnTensorDescriptor_t dy,
                                                            const cudnnConvolutionDescriptor_t c,
                                                            const cudnnFilterDescriptor_t dw, const int requested,
                                                            int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perfs) {
  if (requested < 1 || !shapes_fit(*x, *dw, *c, *dy)) return CUDNN_STATUS_BAD_PARAM;
  one_candidate(returned, perfs, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, c->math);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t x,
                                                      const cudnnFilterDescriptor_t w,
                                                      const cudnnConvolutionDescriptor_t c,
                                                      const cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t,
                                                      size_t* bytes) {
  if (!shapes_fit(*x, *w, *c, *y)) return CUDNN_STATUS_BAD_PARAM;
  *bytes = kFakeWorkspace;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t, const cudnnFilterDescriptor_t w,
                                                           const cudnnTensorDescriptor_t dy,
                                                           const cudnnConvolutionDescriptor_t c,
                                                           const cudnnTensorDescriptor_t dx,
                                                           cudnnConvolutionBwdDataAlgo_t, size_t* bytes) {
  if (!shapes_fit(*dx, *w, *c, *dy)) return CUDNN_STATUS_BAD_PARAM;
  *bytes = kFakeWorkspace;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t x,
                                                             const cudnnTensorDescriptor_t dy,
                                                             const cudnnConvolutionDescriptor_t c,
                                                             const cudnnFilterDescriptor_t dw,
                                                             cudnnConvolutionBwdFilterAlgo_t, size_t* bytes) {
  if (!shapes_fit(*x, *dw, *c, *dy)) return CUDNN_STATUS_BAD_PARAM;
  *bytes = kFakeWorkspace;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t, const void* alpha, const cudnnTensorDescriptor_t x_desc,
                                      const void* x, const cudnnFilterDescriptor_t w_desc, const void* w,
                                      const cudnnConvolutionDescriptor_t c, cudnnConvolutionFwdAlgo_t, void* workspace,
                                      size_t workspace_bytes, const void* beta, const cudnnTensorDescriptor_t y_desc,
                                      void* y) {
  if (!shapes_fit(*x_desc, *w_desc, *c, *y_desc) || workspace_bytes < kFakeWorkspace || workspace == nullptr) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  std::vector<double> sums(static_cast<size_t>(y_desc->n) * y_desc->c * y_desc->h * y_desc->w, 0.0);
  const cudnnDataType_t t = x_desc->type;
  for_each_tap(*x_desc, *w_desc, *c, *y_desc,
               [&](size_t xi, size_t wi, size_t yi) { sums[yi] += load(x, t, xi) * load(w, t, wi); });
  blend(y, y_desc->type, sums, alpha, beta);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t, const void* alpha, const cudnnFilterDescriptor_t w_desc,
                                           const void* w, const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                           const cudnnConvolutionDescriptor_t c, cudnnConvolutionBwdDataAlgo_t,
                                           void* workspace, size_t workspace_bytes, const void* beta,
                                           const cudnnTensorDescriptor_t dx_desc, void* dx) {
  if (!shapes_fit(*dx_desc, *w_desc, *c, *dy_desc) || workspace_bytes < kFakeWorkspace || workspace == nullptr) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  std::vector<double> sums(static_cast<size_t>(dx_desc->n) * dx_desc->c * dx_desc->h * dx_desc->w, 0.0);
  const cudnnDataType_t t = dx_desc->type;
  for_each_tap(*dx_desc, *w_desc, *c, *dy_desc,
               [&](size_t xi, size_t wi, size_t yi) { sums[xi] += load(dy, t, yi) * load(w, t, wi); });
  blend(dx, t, sums, alpha, beta);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t, const void* alpha, const cudnnTensorDescriptor_t x_desc,
                                             const void* x, const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                             const cudnnConvolutionDescriptor_t c, cudnnConvolutionBwdFilterAlgo_t,
                                             void* workspace, size_t workspace_bytes, const void* beta,
                                             const cudnnFilterDescriptor_t dw_desc, void* dw) {
  if (!shapes_fit(*x_desc, *dw_desc, *c, *dy_desc) || workspace_bytes < kFakeWorkspace || workspace == nullptr) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  std::vector<double> sums(static_cast<size_t>(dw_desc->k) * dw_desc->c * dw_desc->h * dw_desc->w, 0.0);
  const cudnnDataType_t t = x_desc->type;
  for_each_tap(*x_desc, *dw_desc, *c, *dy_desc,
               [&](size_t xi, size_t wi, size_t yi) { sums[wi] += load(x, t, xi) * load(dy, t, yi); });
  blend(dw, t, sums, alpha, beta);
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
