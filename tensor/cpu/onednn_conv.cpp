// oneDNN convolution primitives for bfloat16 conv2d (onednn_conv.h): per pass (forward with or without bias,
// grad input, grad weight) and shape one cached primitive with the reorders between the tensors' NCHW / OIHW
// and the layouts it chose, which oneDNN picks when given format_tag::any (on AMX: channels last for the
// activations, VNNI-blocked weights).
#include "tensor/cpu/onednn_conv.h"

#include <dnnl.hpp>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensor/cpu/onednn_context.h"

namespace syncgrad::cpu {
namespace {

using dnnl::memory;
using DataType = memory::data_type;
using Tag = memory::format_tag;

constexpr size_t kMaxCachedConvolutions = 256;

enum class Pass { forward, forward_bias, backward_input, backward_weight };

// A pass and the shape's sizes: everything the primitive depends on.
using Key = std::array<int64_t, 17>;

Key key_of(Pass pass, const ConvShape& s) {
  const Conv2dParams& p = s.p;
  return {static_cast<int64_t>(pass), s.batch, s.c_in, s.h, s.w, s.c_out, s.kh, s.kw, s.oh, s.ow, s.groups,
          p.stride.h, p.stride.w, p.padding.h, p.padding.w, p.dilation.h, p.dilation.w};
}

// The convolution in oneDNN's terms: dims, and the tensors' own layouts. oneDNN counts dilation from 0 and takes
// the right/bottom padding that makes the output size come out (less than the left one where the last
// window does not reach the border, which PyTorch's floor leaves out).
struct Geometry {
  memory::dims strides, dilation, padding_l, padding_r;
  memory::desc src, weights, dst, bias;
};

Geometry geometry(const ConvShape& s) {
  const Conv2dParams& p = s.p;
  auto right = [](int64_t out, int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
    return (out - 1) * stride + (kernel - 1) * dilation + 1 - in - pad;
  };
  const memory::dims weights = s.groups == 1
                                   ? memory::dims{s.c_out, s.c_in, s.kh, s.kw}
                                   : memory::dims{s.groups, s.c_out_group(), s.c_in_group(), s.kh, s.kw};
  return {{p.stride.h, p.stride.w},
          {p.dilation.h - 1, p.dilation.w - 1},
          {p.padding.h, p.padding.w},
          {right(s.oh, s.h, s.kh, p.stride.h, p.padding.h, p.dilation.h),
           right(s.ow, s.w, s.kw, p.stride.w, p.padding.w, p.dilation.w)},
          memory::desc({s.batch, s.c_in, s.h, s.w}, DataType::bf16, Tag::nchw),
          memory::desc(weights, DataType::bf16, s.groups == 1 ? Tag::oihw : Tag::goihw),
          memory::desc({s.batch, s.c_out, s.oh, s.ow}, DataType::bf16, Tag::nchw),
          memory::desc({s.c_out}, DataType::bf16, Tag::a)};
}

memory::desc any_layout(const memory::desc& d, DataType type = DataType::bf16) {
  return memory::desc(d.dims(), type, Tag::any);
}

// One operand of a primitive: the tensor's layout, the primitive's, and the reorder between them (into the
// primitive's for inputs, out of it for the output) where they differ.
struct Operand {
  int arg;
  memory::desc user, inner;
  bool output;
  std::optional<dnnl::reorder> reorder;
};

Operand operand(int arg, const memory::desc& user, const memory::desc& inner, bool output = false) {
  Operand o{arg, user, inner, output, std::nullopt};
  if (user != inner) {
    const auto& engine = onednn::engine();
    o.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(engine, inner, engine, user))
                       : dnnl::reorder(dnnl::reorder::primitive_desc(engine, user, engine, inner));
  }
  return o;
}

struct Convolution {
  dnnl::primitive primitive;
  memory::desc scratchpad;
  std::vector<Operand> operands;  // in the order run() is given their data
};

// oneDNN's reference kernels run a bfloat16 convolution far below the float32 kernels: those are left to them.
bool fast_implementation(const char* name) { return std::string(name).rfind("ref", 0) != 0; }

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// A convolution of primitive descriptor pd (its constructor's type: Primitive) over these operands; nullptr where
// oneDNN only has its reference kernels for it.
template <class Primitive, class Descriptor>
std::shared_ptr<const Convolution> convolution_of(const Descriptor& pd, std::vector<Operand> operands) {
  if (!fast_implementation(pd.impl_info_str())) return nullptr;
  return std::make_shared<const Convolution>(Convolution{Primitive(pd), pd.scratchpad_desc(), std::move(operands)});
}

// The primitive for `pass` on this shape; nullptr where oneDNN has only reference kernels or refuses it.
std::shared_ptr<const Convolution> create(Pass pass, const ConvShape& s) {
  const Geometry g = geometry(s);
  const auto& engine = onednn::engine();
  const memory::desc src = any_layout(g.src), weights = any_layout(g.weights), dst = any_layout(g.dst);
  const bool bias = pass == Pass::forward_bias;
  const dnnl::convolution_forward::primitive_desc forward(
      bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                             src, weights, g.bias, dst, g.strides, g.dilation, g.padding_l,
                                             g.padding_r)
           : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                             src, weights, dst, g.strides, g.dilation, g.padding_l, g.padding_r),
      user_scratchpad(), engine);
  if (pass == Pass::forward || pass == Pass::forward_bias) {
    std::vector<Operand> operands{operand(DNNL_ARG_SRC, g.src, forward.src_desc()),
                                  operand(DNNL_ARG_WEIGHTS, g.weights, forward.weights_desc()),
                                  operand(DNNL_ARG_DST, g.dst, forward.dst_desc(), true)};
    if (bias) operands.push_back(operand(DNNL_ARG_BIAS, g.bias, forward.bias_desc()));
    return convolution_of<dnnl::convolution_forward>(forward, std::move(operands));
  }
  if (pass == Pass::backward_input) {
    const dnnl::convolution_backward_data::primitive_desc backward(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src, weights, dst, g.strides,
                                              g.dilation, g.padding_l, g.padding_r),
        user_scratchpad(), engine, forward);
    return convolution_of<dnnl::convolution_backward_data>(
        backward, {operand(DNNL_ARG_DIFF_DST, g.dst, backward.diff_dst_desc()),
                   operand(DNNL_ARG_WEIGHTS, g.weights, backward.weights_desc()),
                   operand(DNNL_ARG_DIFF_SRC, g.src, backward.diff_src_desc(), true)});
  }
  // The weight gradient is summed in float32 and rounded once, by the reorder into the tensor.
  const dnnl::convolution_backward_weights::primitive_desc backward(
      dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src,
                                               any_layout(g.weights, DataType::f32), dst, g.strides, g.dilation,
                                               g.padding_l, g.padding_r),
      user_scratchpad(), engine, forward);
  return convolution_of<dnnl::convolution_backward_weights>(
      backward, {operand(DNNL_ARG_DIFF_DST, g.dst, backward.diff_dst_desc()),
                 operand(DNNL_ARG_SRC, g.src, backward.src_desc()),
                 operand(DNNL_ARG_DIFF_WEIGHTS, g.weights, backward.diff_weights_desc(), true)});
}

std::shared_ptr<const Convolution> convolution_for(Pass pass, const ConvShape& s) {
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const Convolution>> cache;
  const Key key = key_of(pass, s);
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kMaxCachedConvolutions) cache.clear();
  std::shared_ptr<const Convolution> convolution;
  try {
    convolution = create(pass, s);
  } catch (const dnnl::error&) {
    convolution = nullptr;  // a shape oneDNN refuses: the caller's own kernels run it
  }
  cache.emplace(key, convolution);
  return convolution;
}

// Runs the convolution on the tensors' data (one per operand, in its order): inputs reordered into this thread's
// buffers where the layouts differ, the output written there and reordered back.
void execute(const Convolution& convolution, std::initializer_list<const Tensor*> tensors) {
  const auto& engine = onednn::engine();
  dnnl::stream& stream = onednn::stream();
  std::unordered_map<int, memory> args{{DNNL_ARG_SCRATCHPAD, onednn::thread_memory(convolution.scratchpad, 0)}};
  struct Pending {  // an output's reorder out of the primitive's layout, run after the primitive
    const dnnl::reorder& reorder;
    memory from, to;
  };
  std::vector<Pending> outputs;
  int slot = 1;
  auto tensor = tensors.begin();
  for (const Operand& o : convolution.operands) {
    memory user(o.user, engine, (*tensor++)->data_ptr());
    if (!o.reorder) {
      args.emplace(o.arg, user);
      continue;
    }
    memory inner = onednn::thread_memory(o.inner, slot++);
    if (o.output) {
      outputs.push_back({*o.reorder, inner, user});
    } else {
      o.reorder->execute(stream, user, inner);
    }
    args.emplace(o.arg, inner);
  }
  convolution.primitive.execute(stream, args);
  for (Pending& p : outputs) p.reorder.execute(stream, p.from, p.to);
  stream.wait();
}

// Runs the pass where oneDNN has a fast primitive for it (false elsewhere); oneDNN's failures while running it
// (out of memory for its buffers, say) become DeviceErrors.
bool run(Pass pass, const ConvShape& s, std::initializer_list<const Tensor*> tensors) {
  const std::shared_ptr<const Convolution> convolution = convolution_for(pass, s);
  if (!convolution) return false;
  try {
    execute(*convolution, tensors);
  } catch (const dnnl::error& e) {
    onednn::throw_run_failure(e, "bfloat16 convolution", true);
  }
  return true;
}

}  // namespace

bool onednn_conv_forward(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                         const ConvShape& s) {
  if (bias.defined()) return run(Pass::forward_bias, s, {&input, &weight, &out, &bias});
  return run(Pass::forward, s, {&input, &weight, &out});
}

bool onednn_conv_backward_input(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight,
                                const ConvShape& s) {
  return run(Pass::backward_input, s, {&grad_out, &weight, &grad_input});
}

bool onednn_conv_backward_weight(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input,
                                 const ConvShape& s) {
  return run(Pass::backward_weight, s, {&grad_out, &input, &grad_weight});
}

}  // namespace syncgrad::cpu
