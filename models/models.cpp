// models::make_model: the name -> model table.
#include "models/models.h"

#include "models/cnn.h"
#include "models/mlp.h"
#include "models/resnet.h"

namespace syncgrad::models {

std::vector<std::string> model_names() { return {"mlp", "cnn", "resnet18", "resnet20"}; }

std::shared_ptr<nn::Module> make_model(const std::string& name, Generator* gen) {
  if (name == "mlp") return std::make_shared<MLP>(gen);
  if (name == "cnn") return std::make_shared<CNN>(gen);
  if (name == "resnet18") return resnet18(gen);
  if (name == "resnet20") return resnet20(gen);
  std::string known;
  for (const std::string& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  throw ValueError("make_model: unknown model \"" + name + "\"; known models: " + known);
}

}  // namespace syncgrad::models
