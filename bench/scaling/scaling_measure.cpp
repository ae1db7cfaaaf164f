// Running the measured configurations: in this process (single, dp) or as DDP ranks (a temporary directory
// carries the configuration to them and their results back).
#include "bench/scaling/scaling_measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "bench/scaling/ddp_rank.h"
#include "bench/scaling/in_process_runs.h"
#include "bench/scaling/rank_launcher.h"

namespace syncgrad::bench {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the temporary directory, removed with its files when this goes away.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (fs::temp_directory_path() / "syncgrad-bench-XXXXXX").string();
    SYNCGRAD_CHECK(mkdtemp(pattern.data()) != nullptr, IOError, "syncgrad-bench: cannot create a directory like ",
                   pattern);
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  SYNCGRAD_CHECK(in, IOError, "syncgrad-bench: a rank left no result file ", path);
  return nlohmann::json::parse(in);
}

std::string megabytes_label(double mb) { return fmt::format("{:g} MB", mb); }

struct Planned {
  std::string group, setting;
  RunConfig config;
};

std::vector<Planned> plan(const ScalingOptions& o) {
  std::vector<Planned> runs;
  RunConfig single = o.base;
  single.mode = "single";
  single.workers = 1;
  runs.push_back({"main", "", single});
  for (int p : o.workers) {
    RunConfig c = o.base;
    c.workers = p;
    if (o.run_dp) {
      c.mode = "dp";
      runs.push_back({"main", "", c});
    }
    if (o.run_ddp) {
      c.mode = "ddp";
      c.allreduce_sweep = p == o.workers.back() && p > 1;
      runs.push_back({"main", "", c});
    }
  }
  RunConfig sweep = o.base;
  sweep.mode = "ddp";
  sweep.workers = o.workers.back();
  for (const std::string& kind : o.sweeps) {
    if (kind == "buckets") {
      for (double mb : {1.0, 5.0, 25.0, 100.0}) {
        RunConfig c = sweep;
        c.bucket_cap_mb = mb;
        runs.push_back({kind, megabytes_label(mb), c});
      }
    } else if (kind == "overlap") {
      for (bool on : {true, false}) {
        RunConfig c = sweep;
        c.overlap = on;
        runs.push_back({kind, on ? "on" : "off", c});
      }
    } else {
      for (const char* hook : {"allreduce", "fp16", "bf16", "powersgd"}) {
        RunConfig c = sweep;
        c.hook = hook;
        // PowerSGD sends plain allreduces for its first 10 iterations: measure after them.
        if (c.hook == "powersgd") c.warmup = std::max(c.warmup, 12);
        // The hook on one worker too: its own compute and the collectives it issues, for the model.
        if (c.hook != "allreduce" && c.workers > 1) {
          RunConfig one = c;
          one.workers = 1;
          runs.push_back({kind, hook, one});
        }
        runs.push_back({kind, hook, c});
      }
    }
  }
  return runs;
}

}  // namespace

const MeasuredPoint* Measurements::find(const std::string& group, const std::string& mode, int workers,
                                        const std::string& setting) const {
  for (const MeasuredPoint& p : points) {
    if (p.group == group && p.result.config.mode == mode && p.result.config.workers == workers &&
        p.setting == setting) {
      return &p;
    }
  }
  return nullptr;
}

RunResult run_ddp(const RunConfig& config, const std::string& self) {
  TemporaryDirectory dir;
  const std::string config_path = dir.path() + "/config.json";
  {
    std::ofstream out(config_path);
    out << to_json(config).dump();
    SYNCGRAD_CHECK(out.flush(), IOError, "syncgrad-bench: cannot write ", config_path);
  }
  launch_ranks(config.workers, {self, "scaling-rank", "--config", config_path, "--out", dir.path()});
  std::vector<nlohmann::json> ranks;
  for (int r = 0; r < config.workers; ++r) ranks.push_back(read_json(rank_result_path(dir.path(), r)));
  return merge_rank_results(config, ranks);
}

RunResult combine_repeats(const std::vector<RunResult>& repeats) {
  SYNCGRAD_CHECK(!repeats.empty(), ValueError, "combine_repeats: no runs");
  std::vector<const RunResult*> by_rate;
  for (const RunResult& r : repeats) by_rate.push_back(&r);
  std::sort(by_rate.begin(), by_rate.end(),
            [](const RunResult* a, const RunResult* b) { return a->samples_per_second < b->samples_per_second; });
  RunResult combined = *by_rate[by_rate.size() / 2];
  if (repeats.size() == 1) return combined;
  combined.steps.clear();
  std::vector<double> times;
  for (const RunResult& r : repeats) {
    combined.steps.insert(combined.steps.end(), r.steps.begin(), r.steps.end());
    for (const StepRecord& s : r.steps) times.push_back(s.step);
    for (size_t w = 0; w < r.peak_bytes.size() && w < combined.peak_bytes.size(); ++w) {
      combined.peak_bytes[w] = std::max(combined.peak_bytes[w], r.peak_bytes[w]);
    }
  }
  combined.split = median_split(combined.steps);
  // Per-step thread loads are means over each run: average them over the runs, worker by worker.
  for (size_t w = 0; w < combined.thread_load.size(); ++w) {
    ThreadLoad sum;
    for (const RunResult& r : repeats) {
      const ThreadLoad& l = r.thread_load.at(w);
      sum = {sum.main_cpu + l.main_cpu, sum.main_wait + l.main_wait, sum.other_cpu + l.other_cpu,
             sum.other_wait + l.other_wait};
    }
    combined.thread_load[w] = sum / static_cast<double>(repeats.size());
  }
  for (size_t i = 0; i < combined.collectives.size(); ++i) {
    std::vector<double> times;
    std::vector<double> cpu;
    for (const RunResult& r : repeats) {
      times.push_back(r.collectives.at(i).replay_seconds);
      cpu.push_back(r.collectives.at(i).replay_cpu_seconds);
    }
    combined.collectives[i].replay_seconds = median(times);
    combined.collectives[i].replay_cpu_seconds = median(cpu);
  }
  combined.mean_step_seconds = combined.rank_skew_seconds = 0;
  for (const RunResult& r : repeats) {
    combined.mean_step_seconds += r.mean_step_seconds / static_cast<double>(repeats.size());
    combined.rank_skew_seconds += r.rank_skew_seconds / static_cast<double>(repeats.size());
  }
  const double low = by_rate.front()->samples_per_second, high = by_rate.back()->samples_per_second;
  const double across = combined.samples_per_second > 0 ? (high - low) / 2 / combined.samples_per_second : 0;
  combined.noise = std::max(relative_spread(times), across);
  return combined;
}

Measurements measure(const ScalingOptions& options, const std::string& self) {
  const std::vector<Planned> runs = plan(options);
  std::vector<std::vector<RunResult>> results(runs.size());
  for (int repeat = 0; repeat < options.repeats; ++repeat) {
    for (size_t i = 0; i < runs.size(); ++i) {
      const RunConfig& c = runs[i].config;
      std::fprintf(stderr, "syncgrad-bench: [%d/%d] %s%s%s\n", repeat + 1, options.repeats, c.label().c_str(),
                   runs[i].group == "main" ? "" : " (sweep ",
                   runs[i].group == "main" ? "" : (runs[i].group + ")").c_str());
      results[i].push_back(c.mode == "ddp" ? run_ddp(c, self) : run_in_process(c));
    }
  }
  Measurements m;
  for (size_t i = 0; i < runs.size(); ++i) {
    m.points.push_back({runs[i].group, runs[i].setting, combine_repeats(results[i]), results[i]});
  }
  return m;
}

}  // namespace syncgrad::bench
