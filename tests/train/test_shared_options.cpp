// The options syncgrad-train's ranks must share (tools/train/rank_agreement.h), no process group needed: every
// option of TrainConfig's JSON is compared by its flag name except the per-rank ones; --device by its type only;
// values are exact.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "tools/train/rank_agreement.h"

using namespace syncgrad;
using namespace syncgrad::train;

namespace {

std::map<std::string, std::string> by_name(const distributed::Settings& settings) {
  return {settings.begin(), settings.end()};
}

}  // namespace

TEST_CASE("every option of the config's JSON is shared by its flag name, except the per-rank ones") {
  TrainConfig config;
  config.lr = 0.1;
  config.batch_size = 32;
  const auto shared = by_name(shared_options(config));
  CHECK(shared.at("--lr") == "0.1");
  CHECK(shared.at("--batch-size") == "32");
  CHECK(shared.at("--optimizer") == "sgd");
  CHECK(shared.at("--no-shuffle") == "not given");
  const nlohmann::json json = nlohmann::json::parse(config.to_json());
  for (const auto& [key, value] : json.items()) {
    CAPTURE(key);
    const bool per_rank = std::find(kPerRankOptions.begin(), kPerRankOptions.end(), key) != kPerRankOptions.end();
    const bool renamed = key == "shuffle" || key == "device";
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    CHECK((per_rank || renamed) != (shared.count(flag) == 1));
  }
  for (const char* flag : {"--threads", "--workers", "--data-dir"}) CHECK(shared.count(flag) == 0);
}

TEST_CASE("--device is shared by its type, so each rank may name its own GPU; values are exact") {
  TrainConfig a, b;
  a.device = parse_device_choice("cuda:0");
  b.device = parse_device_choice("cuda:1");
  CHECK(by_name(shared_options(a)).at("--device type") == "cuda");
  CHECK(shared_options(a) == shared_options(b));
  b.device = parse_device_choice("cpu");
  CHECK(shared_options(a) != shared_options(b));
  TrainConfig c = a;
  c.lr = std::nextafter(a.lr, 1.0);
  CHECK(shared_options(a) != shared_options(c));
}
