// models::make_model: builds a model by name (mlp, cnn, resnet18, resnet20) for programs and the trainer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "tensor/generator.h"

namespace syncgrad::models {

// The names make_model accepts.
std::vector<std::string> model_names();
// A freshly initialised model (weights drawn from `gen`, default the process generator); an unknown name is a
// ValueError listing the known ones.
std::shared_ptr<nn::Module> make_model(const std::string& name, Generator* gen = nullptr);

}  // namespace syncgrad::models
