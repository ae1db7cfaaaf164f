// Stochastic gradient descent with optional momentum, dampening, Nesterov momentum, L2 weight decay and
// maximisation: PyTorch's torch.optim.SGD (same defaults except lr, which PyTorch requires).
#pragma once

#include <vector>

#include "optim/optimizer.h"

namespace syncgrad::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

// Group options: "lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize".
// State per parameter (with momentum): "momentum_buffer".
class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});
  void step() override;

 protected:
  void validate_options(const std::map<std::string, double>& options) const override;
  std::vector<std::string> state_buffer_names() const override;
  std::vector<std::string> required_buffers(const std::map<std::string, double>& options) const override;
  bool counts_steps() const override { return false; }
};

}  // namespace syncgrad::optim
