// The scaling subcommand's flow, and the context line (load average, date, cores) it reports.
#include "bench/scaling/scaling_command.h"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include "tensor/check.h"
#include "tensor/errors.h"
#include "tensor/threads.h"
#include "bench/scaling/ddp_rank.h"
#include "bench/scaling/scaling_analysis.h"
#include "bench/scaling/scaling_plot.h"
#include "bench/scaling/scaling_report.h"
#include "bench/scaling/synthetic_task.h"

namespace syncgrad::bench {
namespace {

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return in ? one + " " + five + " " + fifteen : "unknown";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

}  // namespace

int run_scaling(const ScalingOptions& options, const std::string& self) {
  set_num_threads(1);  // one compute thread per worker: DataParallel's threads each run single-threaded kernels
  RunContext context;
  context.task_description = SyntheticTask(options.base.model).description();
  context.date = utc_now();
  context.cores = static_cast<int>(std::thread::hardware_concurrency());
  const std::string load_at_start = load_average();
  const Measurements measurements = measure(options, self);
  context.load_average = load_at_start + " at start, " + load_average() + " at the end";
  const Analysis analysis = analyse(options, measurements);
  print_report(stdout, options, context, measurements, analysis);
  if (!options.csv_path.empty()) write_csv(options.csv_path, measurements, analysis);
  if (!options.json_path.empty()) write_json(options.json_path, options, context, measurements, analysis);
  if (!options.plot_path.empty()) plot::write_svg(options.plot_path, speedup_plot(options, measurements, analysis));
  return 0;
}

int run_scaling_rank(const std::string& config_path, const std::string& out_dir) {
  std::ifstream in(config_path);
  SYNCGRAD_CHECK(in, IOError, "syncgrad-bench scaling-rank: cannot read ", config_path);
  run_ddp_rank(run_config_from_json(nlohmann::json::parse(in)), out_dir);
  return 0;
}

}  // namespace syncgrad::bench
