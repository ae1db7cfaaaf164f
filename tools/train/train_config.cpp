// TrainConfig <-> JSON; the choices by the names of train_choices.h.
#include "tools/train/train_config.h"

#include <nlohmann/json.hpp>

namespace syncgrad::train {

std::string TrainConfig::to_json() const {
  nlohmann::json j = {{"model", model},
                      {"data_dir", data_dir},
                      {"epochs", epochs},
                      {"batch_size", batch_size},
                      {"lr", lr},
                      {"optimizer", to_string(optimizer)},
                      {"momentum", momentum},
                      {"weight_decay", weight_decay},
                      {"seed", seed},
                      {"threads", threads},
                      {"workers", workers},
                      {"shuffle", shuffle},
                      {"max_steps", max_steps},
                      {"parallel", to_string(parallel)},
                      {"dp_workers", dp_workers},
                      {"backend", to_string(backend)},
                      {"accumulate", accumulate},
                      {"scale_lr", to_string(scale_lr)},
                      {"warmup_steps", warmup_steps},
                      {"bucket_cap_mb", bucket_cap_mb},
                      {"comm_hook", to_string(comm_hook)},
                      {"find_unused_parameters", find_unused_parameters},
                      {"dataset", dataset},
                      {"sync_batch_norm", sync_batch_norm},
                      {"zero", zero},
                      {"model_config", model_config},
                      {"eval_every", eval_every},
                      {"amp", to_string(amp)},
                      {"lr_schedule", to_string(lr_schedule)},
                      {"device", to_string(device)},
                      {"checkpoint_every", checkpoint_every},
                      {"keep_checkpoints", keep_checkpoints},
                      {"elastic", elastic}};
  return j.dump();
}

TrainConfig TrainConfig::from_json(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  TrainConfig c;
  c.model = j.at("model").get<std::string>();
  c.data_dir = j.at("data_dir").get<std::string>();
  c.epochs = j.at("epochs").get<int>();
  c.batch_size = j.at("batch_size").get<int64_t>();
  c.lr = j.at("lr").get<double>();
  c.optimizer = parse_optimizer_kind(j.at("optimizer").get<std::string>());
  c.momentum = j.at("momentum").get<double>();
  c.weight_decay = j.at("weight_decay").get<double>();
  c.seed = j.at("seed").get<uint64_t>();
  c.threads = j.at("threads").get<int>();
  c.workers = j.value("workers", c.workers);  // absent in checkpoints written before --workers existed
  c.shuffle = j.at("shuffle").get<bool>();
  c.max_steps = j.at("max_steps").get<int64_t>();
  // Absent in checkpoints written before multi-process training existed.
  c.parallel = parse_parallelism(j.value("parallel", to_string(c.parallel)));
  c.dp_workers = j.value("dp_workers", c.dp_workers);
  c.backend = parse_backend_choice(j.value("backend", to_string(c.backend)));
  c.accumulate = j.value("accumulate", c.accumulate);
  c.scale_lr = parse_lr_scaling(j.value("scale_lr", to_string(c.scale_lr)));
  c.warmup_steps = j.value("warmup_steps", c.warmup_steps);
  c.bucket_cap_mb = j.value("bucket_cap_mb", c.bucket_cap_mb);
  c.comm_hook = parse_comm_hook_choice(j.value("comm_hook", to_string(c.comm_hook)));
  c.find_unused_parameters = j.value("find_unused_parameters", c.find_unused_parameters);
  c.dataset = j.value("dataset", c.dataset);
  c.sync_batch_norm = j.value("sync_batch_norm", c.sync_batch_norm);
  c.zero = j.value("zero", c.zero);
  c.model_config = j.value("model_config", c.model_config);
  c.eval_every = j.value("eval_every", c.eval_every);
  c.amp = parse_amp_mode(j.value("amp", to_string(c.amp)));
  c.lr_schedule = parse_lr_schedule(j.value("lr_schedule", to_string(c.lr_schedule)));
  c.device = parse_device_choice(j.value("device", to_string(c.device)));
  c.checkpoint_every = j.value("checkpoint_every", c.checkpoint_every);  // absent before step checkpoints
  c.keep_checkpoints = j.value("keep_checkpoints", c.keep_checkpoints);
  c.elastic = j.value("elastic", c.elastic);  // absent before elastic resume
  return c;
}

}  // namespace syncgrad::train
