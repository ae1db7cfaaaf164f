// The kernel families of the CUDA module, registered into the dispatch table by syncgrad_backend_init()
// (tensor/cuda/backend.cpp) once a device is known to exist. One function per family file.
#pragma once

namespace syncgrad::cuda {

void register_copy_kernels();         // copy_ops.cpp: kernels::fill, kernels::copy
void register_elementwise_kernels();  // elementwise_ops.cpp: binary, add_scaled, compare, where, clamp, unary(_backward)
void register_reduce_kernels();       // reduce_ops.cpp: sum_into, minmax_dim, index/ties_backward, var/logsumexp_rows
void register_softmax_kernels();      // softmax_ops.cpp: softmax, softmax_backward
void register_loss_kernels();         // loss_ops.cpp: cross_entropy(_backward), nll_loss(_backward), one_hot
void register_indexing_kernels();     // indexing_ops.cpp: embedding(_backward), index_select/add, gather, scatter_add
void register_random_kernels();       // random_ops.cpp: dropout, uniform, normal, randint
void register_optim_kernels();        // optim_ops.cpp: sgd_step, adam_step, unscale_and_check
void register_gemm_kernels();         // gemm_ops.cpp: gemm
void register_norm_kernels();         // norm_ops.cpp: batch_norm_*, layer_norm_*
void register_pool_kernels();         // pool_ops.cpp: max_pool2d, avg_pool2d, adaptive_avg_pool2d (+ backwards)
void register_attention_kernels();    // attention_ops.cpp: attention_forward, attention_backward (composed)
void register_conv_kernels();         // conv_ops.cpp (cuDNN) or conv_unavailable.cpp: conv2d and its backwards
// The "nccl" process-group backend (distributed/nccl/, compiled into this module): nccl_process_group.cpp, or
// nccl_unavailable.cpp (a factory that says why there is none) when the module is built without NCCL.
void register_nccl_process_group();

}  // namespace syncgrad::cuda
