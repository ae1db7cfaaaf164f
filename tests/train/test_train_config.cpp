// syncgrad-train's choices and TrainConfig's JSON (no data needed, quick): every choice's name parses back to
// the same value, unknown names are refused naming the option, the value and the valid names, and a config
// round-trips through the JSON a checkpoint records, with the choices written by name (the text they had when
// TrainConfig held them as strings), so checkpoints of every version still load.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tensor/errors.h"
#include "tools/train/train_config.h"

using namespace syncgrad;
using namespace syncgrad::train;

namespace {

template <typename Choice>
void check_names_round_trip(const std::vector<std::string>& names, Choice (*parse)(const std::string&)) {
  for (const std::string& name : names) {
    CAPTURE(name);
    CHECK(to_string(parse(name)) == name);
  }
}

}  // namespace

TEST_CASE("every choice's name parses to a value that is written back with that name") {
  check_names_round_trip(amp_mode_names(), parse_amp_mode);
  check_names_round_trip(parallelism_names(), parse_parallelism);
  check_names_round_trip(optimizer_kind_names(), parse_optimizer_kind);
  check_names_round_trip(backend_choice_names(), parse_backend_choice);
  check_names_round_trip(lr_scaling_names(), parse_lr_scaling);
  check_names_round_trip(lr_schedule_names(), parse_lr_schedule);
  CHECK(amp_mode_names() == std::vector<std::string>{"off", "fp16", "bf16"});
  CHECK(parallelism_names() == std::vector<std::string>{"auto", "none", "dp", "ddp"});
  CHECK(parse_amp_mode("bf16") == AmpMode::kBf16);
  CHECK(parse_parallelism("dp") == Parallelism::kDataParallel);
  CHECK(parse_optimizer_kind("adamw") == OptimizerKind::kAdamW);
  for (const std::string hook : {"allreduce", "fp16", "bf16", "powersgd", "powersgd:1", "powersgd:4"}) {
    CHECK(to_string(parse_comm_hook_choice(hook)) == hook);
  }
  CHECK(parse_comm_hook_choice("powersgd:4") == CommHookChoice{CommHookChoice::Kind::kPowerSGD, 4});
  for (const std::string device : {"cpu", "cuda", "cuda:0", "cuda:3"}) {
    CHECK(to_string(parse_device_choice(device)) == device);
  }
  CHECK(parse_device_choice("cuda") == DeviceChoice{DeviceType::kCUDA, std::nullopt});
  CHECK(parse_device_choice("cuda:2") == DeviceChoice{DeviceType::kCUDA, 2});
}

TEST_CASE("an unknown name is refused naming the option, the value and the valid names") {
  CHECK_THROWS_WITH_AS(parse_amp_mode("fp8"), "--amp: unknown mode \"fp8\"; choose off, fp16 or bf16", ValueError);
  CHECK_THROWS_WITH_AS(parse_parallelism("fsdp"), "--parallel: unknown mode \"fsdp\"; choose auto, none, dp or ddp",
                       ValueError);
  CHECK_THROWS_WITH_AS(parse_optimizer_kind("lion"),
                       "--optimizer: unknown optimizer \"lion\"; choose sgd, adam or adamw", ValueError);
  CHECK_THROWS_WITH_AS(parse_backend_choice("mpi"), "--backend: unknown backend \"mpi\"; choose auto, gloo or nccl",
                       ValueError);
  CHECK_THROWS_WITH_AS(parse_lr_scaling("sqrt"), "--scale-lr: unknown scaling \"sqrt\"; choose none or linear",
                       ValueError);
  CHECK_THROWS_WITH_AS(parse_lr_schedule("step"),
                       "--lr-schedule: unknown schedule \"step\"; choose constant or cosine", ValueError);
  CHECK_THROWS_WITH_AS(parse_comm_hook_choice("zip"),
                       "--comm-hook: unknown comm hook \"zip\"; choose allreduce, fp16, bf16, powersgd or powersgd:R",
                       ValueError);
  for (const std::string bad_rank : {"powersgd:0", "powersgd:x", "powersgd:2x", "powersgd:"}) {
    CHECK_THROWS_WITH_AS(parse_comm_hook_choice(bad_rank), doctest::Contains("must be a positive integer"),
                         ValueError);
  }
  CHECK_THROWS_WITH_AS(parse_device_choice("tpu"), doctest::Contains("--device: "), ValueError);
  CHECK_THROWS_WITH_AS(parse_device_choice("tpu"), doctest::Contains("\"tpu\""), ValueError);
}

TEST_CASE("TrainConfig round-trips through JSON with the choices by name") {
  TrainConfig c;
  c.model = "mlp";
  c.amp = AmpMode::kBf16;
  c.parallel = Parallelism::kDistributed;
  c.optimizer = OptimizerKind::kAdam;
  c.backend = BackendChoice::kGloo;
  c.scale_lr = LrScaling::kLinear;
  c.lr_schedule = LrSchedule::kConstant;
  c.comm_hook = parse_comm_hook_choice("powersgd:2");
  c.device = parse_device_choice("cuda:1");
  const nlohmann::json j = nlohmann::json::parse(c.to_json());
  CHECK(j.at("amp") == "bf16");
  CHECK(j.at("parallel") == "ddp");
  CHECK(j.at("optimizer") == "adam");
  CHECK(j.at("backend") == "gloo");
  CHECK(j.at("scale_lr") == "linear");
  CHECK(j.at("lr_schedule") == "constant");
  CHECK(j.at("comm_hook") == "powersgd:2");
  CHECK(j.at("device") == "cuda:1");
  const TrainConfig back = TrainConfig::from_json(c.to_json());
  CHECK(back.to_json() == c.to_json());
  CHECK(back.amp == AmpMode::kBf16);
  CHECK(back.comm_hook == c.comm_hook);
  CHECK(back.device == c.device);

  const nlohmann::json defaults = nlohmann::json::parse(TrainConfig().to_json());
  CHECK(defaults.at("amp") == "off");
  CHECK(defaults.at("parallel") == "auto");
  CHECK(defaults.at("device") == "cpu");
  CHECK(defaults.at("comm_hook") == "allreduce");
  CHECK(defaults.at("lr_schedule") == "cosine");
}

TEST_CASE("a config written before the multi-process options existed loads with their defaults") {
  const std::string old = R"({"model": "cnn", "data_dir": "", "epochs": 1, "batch_size": 64, "lr": 0.05,
      "optimizer": "sgd", "momentum": 0.9, "weight_decay": 0.0, "seed": 0, "threads": 1, "shuffle": true,
      "max_steps": 0})";
  const TrainConfig c = TrainConfig::from_json(old);
  CHECK(c.optimizer == OptimizerKind::kSgd);
  CHECK(c.parallel == Parallelism::kAuto);
  CHECK(c.amp == AmpMode::kOff);
  CHECK(c.device.is_cpu());
  CHECK(c.lr_schedule == LrSchedule::kCosine);
  nlohmann::json bad = nlohmann::json::parse(old);
  bad["amp"] = "fp8";
  CHECK_THROWS_WITH_AS(TrainConfig::from_json(bad.dump()), doctest::Contains("--amp: unknown mode \"fp8\""),
                       ValueError);
}
