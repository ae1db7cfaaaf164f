// The CUDA 2-D convolution (kernels::conv2d, conv2d_backward_input, conv2d_backward_weight) through cuDNN:
// NCHW descriptors of the operands' dtype, cross-correlation with PyTorch's padding / stride / dilation /
// groups, accumulation in f32 (f64 for f64), tensor cores for f16 / bf16, plain FMA for f32 unless TF32 is
// allowed (SYNCGRAD_CUDA_ALLOW_TF32=1, blas.h). The algorithm is cuDNN's heuristic choice among those whose
// workspace fits a limit, remembered per problem; workspaces come from the caching allocator.
#include <climits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "tensor/check.h"
#include "tensor/cuda/blas.h"
#include "tensor/cuda/dnn.h"
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/conv.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::cuda {
namespace {

// Largest workspace an algorithm may ask for.
constexpr size_t kWorkspaceLimit = size_t{1} << 30;

int checked_int(int64_t v, const char* what) {
  SYNCGRAD_CHECK(v <= INT_MAX, ValueError, "conv2d: ", what, " = ", v,
                 " exceeds cuDNN's 32-bit sizes; split the batch");
  return static_cast<int>(v);
}

cudnnDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::f64: return CUDNN_DATA_DOUBLE;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

cudnnMathType_t math_type(DType dtype) {
  switch (dtype) {
    case DType::f16:
    case DType::bf16: return CUDNN_TENSOR_OP_MATH;
    case DType::f32: return tf32_allowed() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    default: return CUDNN_DEFAULT_MATH;
  }
}

// The descriptors of one convolution problem, destroyed with it.
class ConvProblem {
 public:
  // input (N, C_in, H, W), weight (C_out, C_in / groups, kH, kW), output (N, C_out, OH, OW).
  ConvProblem(DType dtype, const Shape& input, const Shape& weight, const Shape& output, const Conv2dParams& p)
      : dtype_(dtype), math_(math_type(dtype)) {
    SG_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_));
    SG_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y_));
    SG_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w_));
    SG_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv_));
    set_tensor(x_, input);
    set_tensor(y_, output);
    SG_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_, data_type(dtype), CUDNN_TENSOR_NCHW, checked_int(weight[0], "C_out"),
                                              checked_int(weight[1], "C_in / groups"), checked_int(weight[2], "kH"),
                                              checked_int(weight[3], "kW")));
    const cudnnDataType_t compute = dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    SG_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        conv_, checked_int(p.padding.h, "padding"), checked_int(p.padding.w, "padding"),
        checked_int(p.stride.h, "stride"), checked_int(p.stride.w, "stride"), checked_int(p.dilation.h, "dilation"),
        checked_int(p.dilation.w, "dilation"), CUDNN_CROSS_CORRELATION, compute));
    SG_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_, checked_int(p.groups, "groups")));
    SG_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, math_));
    key_ = dtype_name(dtype) + shape_str(input) + shape_str(weight) + shape_str(output) + size2_str(p.stride) +
           size2_str(p.padding) + size2_str(p.dilation) + std::to_string(p.groups);
  }
  ~ConvProblem() {
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroyFilterDescriptor(w_);
    cudnnDestroyTensorDescriptor(y_);
    cudnnDestroyTensorDescriptor(x_);
  }
  ConvProblem(const ConvProblem&) = delete;
  ConvProblem& operator=(const ConvProblem&) = delete;

  cudnnTensorDescriptor_t x() const { return x_; }
  cudnnTensorDescriptor_t y() const { return y_; }
  cudnnFilterDescriptor_t w() const { return w_; }
  cudnnConvolutionDescriptor_t conv() const { return conv_; }
  const std::string& key() const { return key_; }

  // alpha = 1 and beta = 0 in the scaling type cuDNN expects for the dtype.
  const void* one() const { return dtype_ == DType::f64 ? static_cast<const void*>(&one_d_) : &one_f_; }
  const void* zero() const { return dtype_ == DType::f64 ? static_cast<const void*>(&zero_d_) : &zero_f_; }

  // The first of cuDNN's ranked candidates that succeeded and fits the workspace limit, preferring for strict
  // f32 (no TF32 unless allowed) one ranked without tensor cores; sets the math type it runs with on the
  // descriptor (FMA for strict f32, the candidate's otherwise). Returns {algo, workspace bytes}.
  template <class Perf>
  std::pair<int, size_t> pick(const Perf* perfs, int count, const char* op) {
    const bool strict = math_ == CUDNN_FMA_MATH;
    auto usable = [](const Perf& p) { return p.status == CUDNN_STATUS_SUCCESS && p.memory <= kWorkspaceLimit; };
    auto tensor_cores = [](const Perf& p) {
      return p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    };
    for (bool any_math : {false, true}) {
      for (int i = 0; i < count; ++i) {
        const Perf& p = perfs[i];
        if (!usable(p) || (strict && !any_math && tensor_cores(p))) continue;
        SG_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, strict ? CUDNN_FMA_MATH : p.mathType));
        return {static_cast<int>(p.algo), p.memory};
      }
    }
    throw DeviceError(std::string(op) + ": cuDNN offers no algorithm for " + key_ + " within " +
                      std::to_string(kWorkspaceLimit >> 20) + " MiB of workspace");
  }

 private:
  void set_tensor(cudnnTensorDescriptor_t d, const Shape& s) {
    SG_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, data_type(dtype_), checked_int(s[0], "N"),
                                              checked_int(s[1], "C"), checked_int(s[2], "H"), checked_int(s[3], "W")));
  }

  DType dtype_;
  cudnnMathType_t math_;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  std::string key_;
  float one_f_ = 1.0f, zero_f_ = 0.0f;
  double one_d_ = 1.0, zero_d_ = 0.0;
};

enum class Pass { forward, backward_input, backward_weight };

struct Choice {
  int algo;
  size_t workspace;
  cudnnMathType_t math;
};

// Chosen algorithms per (device, pass, problem), so the heuristics run once per shape.
std::mutex choices_mutex;
std::map<std::tuple<int, Pass, std::string>, Choice>& choices() {
  static auto* m = new std::map<std::tuple<int, Pass, std::string>, Choice>();
  return *m;
}

// The algorithm for `pass` of `problem` (from the cache, or cuDNN's heuristics), with its math type set.
Choice choose(cudnnHandle_t handle, int device, Pass pass, ConvProblem& problem, const char* op) {
  const auto key = std::make_tuple(device, pass, problem.key());
  {
    std::lock_guard<std::mutex> lock(choices_mutex);
    auto it = choices().find(key);
    if (it != choices().end()) {
      SG_CUDNN_CHECK(cudnnSetConvolutionMathType(problem.conv(), it->second.math));
      return it->second;
    }
  }
  std::pair<int, size_t> picked;
  int returned = 0;
  switch (pass) {
    case Pass::forward: {
      cudnnConvolutionFwdAlgoPerf_t perfs[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      SG_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, problem.x(), problem.w(), problem.conv(),
                                                            problem.y(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                            perfs));
      picked = problem.pick(perfs, returned, op);
      break;
    }
    case Pass::backward_input: {
      cudnnConvolutionBwdDataAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      SG_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, problem.w(), problem.y(), problem.conv(),
                                                                 problem.x(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                                 &returned, perfs));
      picked = problem.pick(perfs, returned, op);
      break;
    }
    case Pass::backward_weight: {
      cudnnConvolutionBwdFilterAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      SG_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, problem.x(), problem.y(), problem.conv(),
                                                                   problem.w(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                                   &returned, perfs));
      picked = problem.pick(perfs, returned, op);
      break;
    }
  }
  // The workspace the chosen algorithm needs with the math type now set (the ranking's figure may be a guess).
  size_t bytes = picked.second;
  switch (pass) {
    case Pass::forward:
      SG_CUDNN_CHECK(
          cudnnGetConvolutionForwardWorkspaceSize(handle, problem.x(), problem.w(), problem.conv(), problem.y(),
                                                  static_cast<cudnnConvolutionFwdAlgo_t>(picked.first), &bytes));
      break;
    case Pass::backward_input:
      SG_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, problem.w(), problem.y(), problem.conv(), problem.x(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(picked.first), &bytes));
      break;
    case Pass::backward_weight:
      SG_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, problem.x(), problem.y(), problem.conv(), problem.w(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(picked.first), &bytes));
      break;
  }
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  SG_CUDNN_CHECK(cudnnGetConvolutionMathType(problem.conv(), &math));
  const Choice choice{picked.first, bytes, math};
  std::lock_guard<std::mutex> lock(choices_mutex);
  choices()[key] = choice;
  return choice;
}

// A device workspace of `bytes` from the caching allocator (freed, stream-ordered, when the tensor goes).
Tensor workspace(Device device, size_t bytes) {
  return empty({static_cast<int64_t>(bytes)}, {.dtype = DType::u8, .device = device});
}

void* workspace_ptr(const Tensor& t) { return t.numel() > 0 ? t.data_ptr() : nullptr; }

void conv2d_kernel(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const Conv2dParams& params) {
  require_floating("conv2d", input.dtype());
  on_device("conv2d", input.device(), [&](cudaStream_t) {
    const int device = input.device().index;
    DnnHandle& dnn = dnn_handle(device);
    ConvProblem problem(input.dtype(), input.sizes(), weight.sizes(), out.sizes(), params);
    std::lock_guard<std::mutex> lock(dnn.mutex);
    const Choice c = choose(dnn.handle, device, Pass::forward, problem, "conv2d");
    const Tensor space = workspace(input.device(), c.workspace);
    SG_CUDNN_CHECK(cudnnConvolutionForward(dnn.handle, problem.one(), problem.x(), input.data_ptr(), problem.w(),
                                           weight.data_ptr(), problem.conv(),
                                           static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), workspace_ptr(space),
                                           c.workspace, problem.zero(), problem.y(), out.data_ptr()));
  });
  if (bias.defined()) {
    const Tensor per_channel = raw::expand(raw::view(bias, {1, bias.numel(), 1, 1}), out.sizes());
    kernels::binary(out.device(), BinaryOp::add, out, out, per_channel);
  }
}

void conv2d_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight,
                                  const Conv2dParams& params) {
  require_floating("conv2d_backward_input", grad_out.dtype());
  on_device("conv2d_backward_input", grad_out.device(), [&](cudaStream_t) {
    const int device = grad_out.device().index;
    DnnHandle& dnn = dnn_handle(device);
    ConvProblem problem(grad_out.dtype(), grad_input.sizes(), weight.sizes(), grad_out.sizes(), params);
    std::lock_guard<std::mutex> lock(dnn.mutex);
    const Choice c = choose(dnn.handle, device, Pass::backward_input, problem, "conv2d_backward_input");
    const Tensor space = workspace(grad_out.device(), c.workspace);
    SG_CUDNN_CHECK(cudnnConvolutionBackwardData(
        dnn.handle, problem.one(), problem.w(), weight.data_ptr(), problem.y(), grad_out.data_ptr(), problem.conv(),
        static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), workspace_ptr(space), c.workspace, problem.zero(),
        problem.x(), grad_input.data_ptr()));
  });
}

void conv2d_backward_weight_kernel(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input,
                                   const Conv2dParams& params) {
  require_floating("conv2d_backward_weight", grad_out.dtype());
  on_device("conv2d_backward_weight", grad_out.device(), [&](cudaStream_t) {
    const int device = grad_out.device().index;
    DnnHandle& dnn = dnn_handle(device);
    ConvProblem problem(grad_out.dtype(), input.sizes(), grad_weight.sizes(), grad_out.sizes(), params);
    std::lock_guard<std::mutex> lock(dnn.mutex);
    const Choice c = choose(dnn.handle, device, Pass::backward_weight, problem, "conv2d_backward_weight");
    const Tensor space = workspace(grad_out.device(), c.workspace);
    SG_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        dnn.handle, problem.one(), problem.x(), input.data_ptr(), problem.y(), grad_out.data_ptr(), problem.conv(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), workspace_ptr(space), c.workspace, problem.zero(),
        problem.w(), grad_weight.data_ptr()));
  });
}

}  // namespace

void register_conv_kernels() {
  kernels::conv2d.set(DeviceType::kCUDA, &conv2d_kernel);
  kernels::conv2d_backward_input.set(DeviceType::kCUDA, &conv2d_backward_input_kernel);
  kernels::conv2d_backward_weight.set(DeviceType::kCUDA, &conv2d_backward_weight_kernel);
}

}  // namespace syncgrad::cuda
