// Activation checkpointing (PyTorch's torch.utils.checkpoint with use_reentrant=True): run part of a model
// without keeping its activations for backward, and recompute them when backward reaches that part.
//   x = nn::checkpoint([&](const Tensor& h) { return block->forward(h); }, x);
// The forward runs fn under NoGradGuard and keeps only the inputs, the state of the random generators and the
// autocast state; one CheckpointBackward node stands for the whole of fn. Its backward restores that state,
// runs fn again with gradients on (on detached copies of the inputs), and backpropagates the incoming
// gradients through the recomputed graph with a nested backward -- so dropout masks, autocast casts and hence
// every gradient are bit for bit those of the run without checkpointing, while the activations of fn live
// only during its own backward.
//
// Reentrant, so: the parameters fn uses get their gradients (and fire their post-accumulate hooks) inside the
// nested backward, in an order the outer graph does not show. DistributedDataParallel copes when it knows:
// DDPOptions::static_graph (syncgrad-train sets it with --activation-checkpointing). Other rules:
//  - fn must compute the same thing twice: no reads of state it changes itself; BatchNorm's running statistics
//    are not updated again by the recomputation (in_checkpoint_recompute()).
//  - fn's outputs all require grad when grad mode is on (fn's parameters are only known after the
//    recomputation); floating inputs keep their requires_grad. Under NoGradGuard fn simply runs.
//  - Random numbers come from the process default generator and the generators named in the options; a
//    generator fn draws from that is not named there gives different numbers in the recomputation.
//  - autograd::grad() through a checkpoint returns the right gradients for its inputs, but the parameters fn
//    uses get theirs accumulated into .grad by the nested backward (PyTorch's reentrant checkpoint refuses
//    torch.autograd.grad instead).
#pragma once

#include <functional>
#include <vector>

#include "nn/module.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace syncgrad::nn {

using CheckpointFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct CheckpointOptions {
  // Generators fn draws from besides default_generator() (always saved and restored). They must outlive the
  // backward.
  std::vector<Generator*> generators;
};

// fn(inputs) with its activations recomputed during backward (see the top of this file). fn must return at
// least one tensor; inputs may be empty or not require grad (fn's parameters still get their gradients).
std::vector<Tensor> checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs,
                               const CheckpointOptions& options = {});
// One tensor in, one out.
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                  const CheckpointOptions& options = {});
// module.forward(input), checkpointed.
Tensor checkpoint(Module& module, const Tensor& input, const CheckpointOptions& options = {});

// True on this thread while a checkpoint's backward recomputes its function (BatchNorm then leaves its running
// statistics alone).
bool in_checkpoint_recompute();

}  // namespace syncgrad::nn
