// The model FLOPs behind MFU (tools/train/model_flops.h), against counts done by hand, and the metrics log's
// cells: absent values empty, never 0.
#include <doctest/doctest.h>

#include "models/gpt.h"
#include "models/models.h"
#include "models/resnet.h"
#include "tools/train/metrics_log.h"
#include "tools/train/mfu.h"
#include "tools/train/model_flops.h"

using namespace syncgrad;

TEST_CASE("forward FLOPs of the bundled models, counted by hand") {
  Generator gen(0);
  // 2 x (784*256 + 256*256 + 256*10)
  CHECK(train::forward_flops_per_example(*models::make_model("mlp", &gen), {1, 28, 28}) == 537600.0);
  // conv1 2*32*1*25*28*28, conv2 2*64*32*25*14*14, fc1 2*3136*128, fc2 2*128*10
  CHECK(train::forward_flops_per_example(*models::make_model("cnn", &gen), {1, 28, 28}) ==
        1254400.0 + 20070400.0 + 802816.0 + 2560.0);
  CHECK(train::training_flops_per_example(*models::make_model("mlp", &gen), {784}) == 3 * 537600.0);
  // ResNet-20 on CIFAR: ~41 M multiply-adds; ResNet-18 (CIFAR variant): ~0.56 G.
  const double r20 = train::forward_flops_per_example(*models::resnet20(&gen), {3, 32, 32});
  CHECK(r20 > 2 * 40e6);
  CHECK(r20 < 2 * 42e6);
  const double r18 = train::forward_flops_per_example(*models::resnet18(&gen), {3, 32, 32});
  CHECK(r18 > 2 * 0.55e9);
  CHECK(r18 < 2 * 0.56e9);
  // GPT: flops_per_token (training) x block_size tokens per window.
  models::GPT gpt(models::GPTConfig::parse("n_layer=1,n_head=2,n_embd=32,block_size=16"), &gen);
  CHECK(train::training_flops_per_example(gpt, {17}) == doctest::Approx(gpt.flops_per_token() * 16));
}

TEST_CASE("MFU: known only with FLOPs and a peak; the percent of the job's peak") {
  train::MfuBasis basis{.flops_per_example = 1e6, .peak_per_core = 1e9, .cores = 2};
  REQUIRE(basis.percent(1000).has_value());
  CHECK(*basis.percent(1000) == doctest::Approx(50.0));  // 1e9 of 2e9 FLOP/s
  CHECK(basis.describe().find("x 2 core(s)") != std::string::npos);
  basis.flops_per_example = 0;
  CHECK_FALSE(basis.percent(1000).has_value());
  CHECK(basis.describe().empty());
}

TEST_CASE("metrics log cells: the original nine columns first, absent values empty") {
  REQUIRE(train::kMetricsColumns.size() >= 10);
  CHECK(train::kMetricsColumns[8] == "skipped_steps");
  CHECK(train::kMetricsColumns[9] == "kind");
  train::MetricsRow row;
  row.step = 7;
  row.epoch = 1;
  row.loss = 0.25;
  const std::vector<std::string> cells = train::metrics_cells(row);
  REQUIRE(cells.size() == train::kMetricsColumns.size());
  CHECK(cells[0] == "7");
  CHECK(cells[2] == "0.25");
  CHECK(cells[7].empty());  // loss_scale without a GradScaler
  CHECK(cells[8].empty());
  CHECK(cells[9] == "train");
}
