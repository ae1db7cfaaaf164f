// Adam (L2 weight decay added to the gradient) and AdamW (decoupled weight decay: p *= 1 - lr * wd before
// the Adam update), with amsgrad and maximisation: PyTorch's torch.optim.Adam / torch.optim.AdamW.
#pragma once

#include <vector>

#include "optim/optimizer.h"

namespace syncgrad::optim {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
};

// Group options: "lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad", "maximize".
// State per parameter: "step" and "exp_avg", "exp_avg_sq" (and "max_exp_avg_sq" with amsgrad).
class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});
  void step() override;

 protected:
  Adam(const char* name, bool decoupled_weight_decay, std::vector<Tensor> params, const AdamOptions& options);
  void validate_options(const std::map<std::string, double>& options) const override;
  std::vector<std::string> state_buffer_names() const override;
  std::vector<std::string> required_buffers(const std::map<std::string, double>& options) const override;
  bool counts_steps() const override { return true; }

 private:
  bool decoupled_weight_decay_;
};

class AdamW : public Adam {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
};

}  // namespace syncgrad::optim
