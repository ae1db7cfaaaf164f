// `syncgrad-bench scaling` flags and their checks.
#include "bench/scaling/scaling_options.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "distributed/comm_hook.h"
#include "tensor/check.h"
#include "tensor/errors.h"
#include "bench/scaling/link.h"
#include "bench/scaling/synthetic_task.h"
#include "tools/cli_checks.h"

namespace syncgrad::bench {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

int parse_worker_count(const std::string& item) {
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(item, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  SYNCGRAD_CHECK(used == item.size(), ValueError, "--workers: \"", item,
                 "\" is not a number; give worker counts like --workers 1,2,4");
  SYNCGRAD_CHECK(n >= 1, ValueError, "--workers: worker count must be >= 1, got ", item);
  return n;
}

// Fails now, not after the measurements, when `path`'s directory cannot take the file.
void check_writable(const std::string& path) {
  if (path.empty()) return;
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  SYNCGRAD_CHECK(std::filesystem::is_directory(dir) && access(dir.c_str(), W_OK) == 0, IOError, "cannot write ", path,
                 ": ", dir.string(), " is not a writable directory");
}

}  // namespace

void add_scaling_flags(CLI::App& command, ScalingOptions& o, std::string& workers_text, std::string& sweeps_text,
                       std::string& links_text) {
  command.add_option("--model", o.base.model, "model to measure (models::make_model names: mlp, cnn, ...)");
  command.add_option("--workers", workers_text, "worker counts, comma-separated (default 1,2; 1 is always run)");
  command.add_option("--steps", o.base.steps, "measured steps per run")->check(cli::at_least(1));
  command.add_option("--warmup", o.base.warmup, "steps before measuring")->check(cli::at_least(0));
  command.add_option("--batch", o.base.batch, "samples per worker and step (DP: workers x batch in one process)")
      ->check(cli::at_least(1));
  command.add_option("--repeats", o.repeats, "runs of each configuration, alternating modes (medians reported)")
      ->check(cli::at_least(1));
  command.add_option("--sweep", sweeps_text,
                     "DDP sweeps at the largest worker count, comma-separated: buckets (1, 5, 25, 100 MB), overlap "
                     "(on/off), hooks (allreduce, fp16, bf16, powersgd)");
  command.add_flag(
      "--no-dp", [&o](int64_t) { o.run_dp = false; }, "skip DataParallel");
  command.add_flag(
      "--no-ddp", [&o](int64_t) { o.run_ddp = false; }, "skip DistributedDataParallel");
  command.add_flag(
      "--no-loader", [&o](int64_t) { o.base.loader = false; },
      "reuse one synthetic batch instead of a DataLoader (no data-wait)");
  command.add_option("--loader-workers", o.base.loader_workers, "DataLoader worker threads (default 0)")
      ->check(cli::at_least(0));
  command.add_option("--bucket-cap-mb", o.base.bucket_cap_mb, "DDP bucket size of the main runs (MiB)")
      ->check(cli::real_above(0));
  command.add_option("--first-bucket-mb", o.base.first_bucket_mb, "DDP first bucket size (MiB)")
      ->check(cli::real_above(0));
  command.add_option("--hook", o.base.hook, "DDP communication hook of the main runs");
  command.add_option("--timeout", o.base.timeout_seconds, "seconds before a silent DDP rank is an error")
      ->check(cli::real_above(0));
  command.add_option("--seed", o.base.seed, "model initialisation and data seed");
  command.add_option("--csv", o.csv_path, "write the measured (and predicted) rows as CSV");
  command.add_option("--json", o.json_path, "write everything (runs, model inputs, predictions) as JSON");
  command.add_option("--plot", o.plot_path, "write speedup against workers as an SVG image");
  command.add_flag("--predict", o.predict, "predict DP and DDP for 1 .. --predict-max workers on each link");
  command.add_option("--predict-links", links_text,
                     "links to predict on, comma-separated: measured (fitted here), pcie4, nvlink4, ib-hdr, given");
  command.add_option("--predict-max", o.predict_max_workers, "largest predicted worker count (powers of two)")
      ->check(cli::whole_in(1, 1 << 20));
  command
      .add_option("--compute-scale", o.compute_scales,
                  "predicted compute time = this machine's x this factor (e.g. 0.01 for a device 100x faster); "
                  "several give one prediction each, the plot shows the first; the measured link only at 1")
      ->check(cli::real_above(0))
      ->delimiter(',');
  command.add_option("--link-alpha-us", o.link_alpha_us, "latency of the \"given\" link (us)")
      ->check(cli::real_at_least(0));
  command.add_option("--link-beta-gbs", o.link_beta_gbs, "bandwidth of the \"given\" link (GB/s)")
      ->check(cli::real_above(0));
}

void finish_scaling_options(ScalingOptions& o, const std::string& workers_text, const std::string& sweeps_text,
                            const std::string& links_text) {
  SyntheticTask task(o.base.model);  // an unknown model is a ValueError listing the known ones
  if (!workers_text.empty()) {
    o.workers.clear();
    for (const std::string& item : split_list(workers_text)) o.workers.push_back(parse_worker_count(item));
    SYNCGRAD_CHECK(!o.workers.empty(), ValueError, "--workers: no worker count given; e.g. --workers 1,2");
  }
  o.workers.push_back(1);
  std::sort(o.workers.begin(), o.workers.end());
  o.workers.erase(std::unique(o.workers.begin(), o.workers.end()), o.workers.end());
  SYNCGRAD_CHECK(o.run_dp || o.run_ddp, ValueError, "--no-dp and --no-ddp together leave nothing to measure");
  o.sweeps = split_list(sweeps_text);
  for (const std::string& sweep : o.sweeps) {
    SYNCGRAD_CHECK(sweep == "buckets" || sweep == "overlap" || sweep == "hooks", ValueError,
                   "--sweep: unknown sweep \"", sweep, "\"; choose from buckets, overlap, hooks");
  }
  SYNCGRAD_CHECK(o.sweeps.empty() || (o.run_ddp && o.workers.back() >= 2), ValueError,
                 "--sweep needs DDP runs with >= 2 workers (give --workers 1,2 and leave out --no-ddp)");
  distributed::make_comm_hook(o.base.hook);  // an unknown hook is a ValueError listing the names
  if (!links_text.empty()) {
    o.predict_links = split_list(links_text);
  } else if (!o.run_ddp) {
    std::erase(o.predict_links, "measured");  // it needs the DDP runs' allreduce sweep
  }
  const bool given = o.link_alpha_us >= 0 || o.link_beta_gbs > 0;
  if (given && (o.link_alpha_us < 0 || o.link_beta_gbs <= 0)) {
    throw ValueError("a given link needs both --link-alpha-us and --link-beta-gbs");
  }
  if (given && std::find(o.predict_links.begin(), o.predict_links.end(), "given") == o.predict_links.end()) {
    o.predict_links.push_back("given");
  }
  for (const std::string& path : {o.csv_path, o.json_path, o.plot_path}) check_writable(path);
  if (!o.predict) return;
  for (const std::string& name : o.predict_links) {
    SYNCGRAD_CHECK(name != "given" || given, ValueError,
                   "--predict-links given: set the link with --link-alpha-us and --link-beta-gbs");
    SYNCGRAD_CHECK(name != "measured" || o.run_ddp, ValueError,
                   "--predict-links measured needs DDP runs (the allreduce fit); leave out --no-ddp");
    if (name != "given" && name != "measured") link_preset(name);  // ValueError listing the presets
  }
}

}  // namespace syncgrad::bench
