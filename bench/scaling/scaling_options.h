// The command line of `syncgrad-bench scaling`: what to measure (model, worker counts, steps, sweeps), where to
// write it (CSV, JSON, SVG) and what to predict (links, worker counts up to 1024, compute scale).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "bench/scaling/run_config.h"

namespace syncgrad::bench {

struct ScalingOptions {
  RunConfig base;  // model, batch, steps, warmup, loader, DDP settings of the main runs
  std::vector<int> workers{1, 2};
  int repeats = 1;                  // each configuration this often, alternating modes
  std::vector<std::string> sweeps;  // "buckets", "overlap", "hooks"
  bool run_dp = true, run_ddp = true;
  std::string csv_path, json_path, plot_path;
  bool predict = false;
  std::vector<std::string> predict_links{"measured", "pcie4", "nvlink4", "ib-hdr"};
  int predict_max_workers = 1024;
  std::vector<double> compute_scales{1};          // predicted compute time = this machine's x each factor
  double link_alpha_us = -1, link_beta_gbs = -1;  // a link given by hand ("given"); both or neither
};

// Declares the flags of the `scaling` subcommand on `command`, writing into `options` and `workers_text`.
void add_scaling_flags(CLI::App& command, ScalingOptions& options, std::string& workers_text, std::string& sweeps_text,
                       std::string& links_text);

// Parses the lists and checks the values; ValueError naming the bad value and a fix. Worker count 1 is added
// when missing (it is the baseline and the model's profile).
void finish_scaling_options(ScalingOptions& options, const std::string& workers_text, const std::string& sweeps_text,
                            const std::string& links_text);

}  // namespace syncgrad::bench
