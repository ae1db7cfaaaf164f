// RunConfig's label and the JSON forms of RunConfig and RunResult.
#include "bench/scaling/run_config.h"

#include <fmt/format.h>

namespace syncgrad::bench {

std::string RunConfig::label() const {
  std::string text = fmt::format("{} {} worker{}", mode, workers, workers == 1 ? "" : "s");
  if (mode == "ddp") {
    text += fmt::format(", bucket {:g} MB, overlap {}, hook {}", bucket_cap_mb, overlap ? "on" : "off", hook);
  }
  return text;
}

nlohmann::json to_json(const RunConfig& c) {
  return {{"mode", c.mode},
          {"model", c.model},
          {"workers", c.workers},
          {"batch", c.batch},
          {"steps", c.steps},
          {"warmup", c.warmup},
          {"loader", c.loader},
          {"loader_workers", c.loader_workers},
          {"bucket_cap_mb", c.bucket_cap_mb},
          {"first_bucket_mb", c.first_bucket_mb},
          {"overlap", c.overlap},
          {"hook", c.hook},
          {"allreduce_sweep", c.allreduce_sweep},
          {"timeout_seconds", c.timeout_seconds},
          {"seed", c.seed}};
}

RunConfig run_config_from_json(const nlohmann::json& j) {
  RunConfig c;
  c.mode = j.at("mode").get<std::string>();
  c.model = j.at("model").get<std::string>();
  c.workers = j.at("workers").get<int>();
  c.batch = j.at("batch").get<int64_t>();
  c.steps = j.at("steps").get<int>();
  c.warmup = j.at("warmup").get<int>();
  c.loader = j.at("loader").get<bool>();
  c.loader_workers = j.at("loader_workers").get<int>();
  c.bucket_cap_mb = j.at("bucket_cap_mb").get<double>();
  c.first_bucket_mb = j.at("first_bucket_mb").get<double>();
  c.overlap = j.at("overlap").get<bool>();
  c.hook = j.at("hook").get<std::string>();
  c.allreduce_sweep = j.at("allreduce_sweep").get<bool>();
  c.timeout_seconds = j.at("timeout_seconds").get<double>();
  c.seed = j.at("seed").get<uint64_t>();
  return c;
}

nlohmann::json to_json(const RunResult& r) {
  nlohmann::json gradients = nlohmann::json::array();
  for (const GradientReady& g : r.gradients) {
    gradients.push_back({{"ready_seconds", g.ready_seconds}, {"numel", g.numel}, {"bytes", g.bytes}});
  }
  nlohmann::json allreduce = nlohmann::json::array();
  for (const AllreduceSample& s : r.allreduce) allreduce.push_back({{"bytes", s.bytes}, {"seconds", s.seconds}});
  nlohmann::json loads = nlohmann::json::array();
  for (const ThreadLoad& l : r.thread_load) loads.push_back(to_json(l));
  nlohmann::json collectives = nlohmann::json::array();
  for (const CollectiveCost& c : r.collectives) collectives.push_back(to_json(c));
  return {{"config", to_json(r.config)},
          {"label", r.config.label()},
          {"median_seconds", to_json(r.split)},
          {"wall_seconds", r.wall_seconds},
          {"mean_step_seconds", r.mean_step_seconds},
          {"samples_per_second", r.samples_per_second},
          {"noise", r.noise},
          {"peak_bytes_per_worker", r.peak_bytes},
          {"payload_bytes_per_step", r.payload_bytes_per_step},
          {"buckets", r.buckets},
          {"gradients", gradients},
          {"allreduce", allreduce},
          {"thread_load_per_step", loads},
          {"collectives", collectives},
          {"rank_skew_seconds", r.rank_skew_seconds}};
}

}  // namespace syncgrad::bench
