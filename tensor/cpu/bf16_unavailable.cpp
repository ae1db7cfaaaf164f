// The bfloat16 dot-product kernels for builds whose compiler cannot target AVX512_BF16: never available, so
// bfloat16 GEMMs and convolutions run through float32 copies.
#include "tensor/cpu/bf16_kernels.h"

namespace syncgrad::cpu::bf16 {
namespace {
[[noreturn]] void unavailable(const char* op) {
  throw DTypeError(std::string(op) + ": this build has no AVX512_BF16 kernels (dot_available() is false)");
}
}  // namespace

bool dot_available() { return false; }
void gemm(const Tensor&, const Tensor&, const Tensor&, double, double) { unavailable("matmul"); }
void conv_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const ConvShape&) {
  unavailable("conv2d");
}
void conv_backward_input(const Tensor&, const Tensor&, const Tensor&, const ConvShape&) {
  unavailable("conv2d_backward");
}
void conv_backward_weight(const Tensor&, const Tensor&, const Tensor&, const ConvShape&) {
  unavailable("conv2d_backward");
}

}  // namespace syncgrad::cpu::bf16
