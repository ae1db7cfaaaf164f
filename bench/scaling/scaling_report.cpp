// Formatting the scaling bench's results as tables, CSV rows and one JSON document.
#include "bench/scaling/scaling_report.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::bench {
namespace {

double ms(double seconds) { return 1e3 * seconds; }
double mb(double bytes) { return bytes / (1 << 20); }

std::string peaks_text(const std::vector<double>& peaks) {
  std::string text;
  for (double p : peaks) text += (text.empty() ? "" : " / ") + fmt::format("{:.1f}", mb(p));
  return text;
}

void print_measured(std::FILE* out, const Measurements& m) {
  fmt::print(out, "\nMeasured (medians over steps; comm exp = communication the step waited for)\n");
  fmt::print(out, "{:<7} {:>7} {:>10} {:>8} {:>6} {:>8} {:>7} {:>7} {:>8} {:>7} {:>7} {:>6}  {}\n", "mode", "workers",
             "samples/s", "speedup", "effic", "step ms", "fwd ms", "bwd ms", "comm exp", "opt ms", "data ms", "noise",
             "peak MiB per worker");
  for (const MeasuredPoint& p : m.points) {
    if (p.group != "main") continue;
    const RunResult& r = p.result;
    const double speedup = speedup_of(m, r);
    fmt::print(
        out,
        "{:<7} {:>7} {:>10.0f} {:>8.2f} {:>6.2f} {:>8.2f} {:>7.2f} {:>7.2f} {:>8.2f} {:>7.2f} {:>7.2f} {:>5.1f}%  {}\n",
        r.config.mode, r.config.workers, r.samples_per_second, speedup, speedup / r.config.workers,
        ms(measured_step_seconds(r)), ms(r.split.forward), ms(r.split.backward), ms(r.split.exposed_comm),
        ms(r.split.optimizer), ms(r.split.data_wait), 100 * r.noise, peaks_text(r.peak_bytes));
  }
  for (const MeasuredPoint& p : m.points) {
    const RunResult& r = p.result;
    if (p.group != "main" || r.config.mode != "dp" || r.config.workers < 2) continue;
    fmt::print(out,
               "dp {} workers, communication per step: replicate {:.3f} ms, scatter {:.3f} ms, gather {:.3f} ms, "
               "reduce {:.3f} ms; worker 0 peak {:.1f} MiB vs the others' {:.1f} MiB ({:.2f}x)\n",
               r.config.workers, ms(r.split.replicate), ms(r.split.scatter), ms(r.split.gather), ms(r.split.reduce),
               mb(r.peak_bytes.front()), mb(r.peak_bytes.back()), r.peak_bytes.front() / r.peak_bytes.back());
  }
}

void print_sweeps(std::FILE* out, const Measurements& m) {
  bool any = false;
  for (const MeasuredPoint& p : m.points) any = any || p.group != "main";
  if (!any) return;
  fmt::print(out, "\nDDP sweeps\n{:<8} {:<10} {:>10} {:>8} {:>10} {:>8} {:>14} {:>7} {:>6}\n", "sweep", "setting",
             "samples/s", "step ms", "exposed ms", "comm ms", "payload KiB/st", "buckets", "noise");
  for (const MeasuredPoint& p : m.points) {
    if (p.group == "main") continue;
    const RunResult& r = p.result;
    fmt::print(out, "{:<8} {:<10} {:>10.0f} {:>8.2f} {:>10.2f} {:>8.2f} {:>14.1f} {:>7} {:>5.1f}%\n", p.group,
               p.setting, r.samples_per_second, ms(measured_step_seconds(r)), ms(r.split.exposed_comm),
               ms(r.split.comm), r.payload_bytes_per_step / 1024, r.buckets, 100 * r.noise);
  }
}

void print_hooks(std::FILE* out, const Measurements& m);

void print_inputs(std::FILE* out, const Measurements& m, const Analysis& a) {
  const StepProfile& p = a.profile;
  fmt::print(out, "\nModel inputs (one worker, batch {})\n", p.batch_per_worker);
  fmt::print(out,
             "  step: data {:.3f} ms, forward {:.3f} ms, loss {:.3f} ms, backward {:.3f} ms (under DDP {:.3f} ms), "
             "optimizer {:.3f} ms\n",
             ms(p.data_seconds), ms(p.forward_seconds), ms(p.loss_seconds), ms(p.backward_seconds),
             ms(p.ddp_backward_seconds), ms(p.optimizer_seconds));
  if (!p.gradients.empty()) {
    fmt::print(out, "  gradients: {} tensors, {:.2f} MiB, final {:.3f} .. {:.3f} ms after backward starts\n",
               p.gradients.size(), mb(p.gradient_bytes()), ms(p.gradients.front().ready_seconds),
               ms(p.last_ready_seconds()));
  }
  fmt::print(out,
             "  DataParallel's serial work here: copy into a replica {:.3f} ms, gradient clone {:.3f} ms, add "
             "{:.3f} ms per replica, output copy {:.4f} ms, hand-off to a worker thread {:.3f} ms\n",
             ms(p.replica_copy_seconds), ms(p.gradient_clone_seconds), ms(p.gradient_add_seconds),
             ms(p.output_copy_seconds), ms(p.wake_seconds));
  if (a.measured_link) {
    const Link& l = a.measured_link->link;
    fmt::print(out, "  link \"measured\": alpha {:.1f} us, beta {:.2f} GB/s", 1e6 * l.alpha_seconds,
               l.beta_bytes_per_second / 1e9);
    if (l.split_bytes > 0) {
      fmt::print(out, " up to {:.0f} KiB; above: alpha {:.1f} us, beta {:.2f} GB/s", l.split_bytes / 1024,
                 1e6 * l.large_alpha_seconds, l.large_beta_bytes_per_second / 1e9);
    }
    fmt::print(out, " ({})\n", l.source);
  }
  for (const auto& [mode, factors] : a.contention) {
    for (const auto& [workers, factor] : factors) {
      if (workers > 1) {
        fmt::print(out, "  contention, {} with {} workers: compute x{:.3f} ({})\n", mode, workers, factor,
                   mode == "ddp" ? "the slowest rank's compute thread on a core or waiting for one, per step, over "
                                   "the profile's compute"
                                 : "its forward time over 1 worker's");
      }
    }
  }
  print_hooks(out, m);
}

// What each communication hook did on one worker and what its messages cost when replayed.
void print_hooks(std::FILE* out, const Measurements& m) {
  for (const MeasuredPoint& p : m.points) {
    const RunResult& r = p.result;
    if (p.group != "hooks" || r.config.hook == "allreduce") continue;
    if (r.config.workers == 1) {
      fmt::print(out, "  hook {} on one worker: backward {:.3f} ms with its launch() {:.3f} ms; finish() {:.3f} ms\n",
                 r.config.hook, ms(r.split.backward), ms(r.split.hook_launch), ms(r.split.hook_finish));
      continue;
    }
    std::string messages;
    for (const CollectiveCost& c : r.collectives) {
      if (c.origin.call == CollectiveOrigin::Call::kOther) continue;
      messages += fmt::format("{}{} bucket {} {} {:.1f} KiB: {:.3f} ms", messages.empty() ? "" : "; ",
                              c.origin.call == CollectiveOrigin::Call::kLaunch ? "launch" : "finish", c.origin.bucket,
                              dtype_name(c.dtype), c.bytes / 1024, ms(c.replay_seconds));
    }
    fmt::print(out, "  hook {} with {} workers, its collectives replayed: {}\n", r.config.hook, r.config.workers,
               messages);
  }
}

void print_validation(std::FILE* out, const Analysis& a) {
  if (a.validation.empty()) return;
  fmt::print(out,
             "\nModel against measurement (step time: DDP's mean, DP's median; target within {:.0f}% or the noise)\n",
             100 * kTargetError);
  fmt::print(out, "{:<34} {:>9} {:>15} {:>13} {:>8} {:>7}  {}\n", "point", "compute x", "measured ms", "predicted ms",
             "error", "noise", "verdict");
  int outside = 0, tested = 0;
  for (const Validation& v : a.validation) {
    const char* verdict = v.is_input ? "(profile input)" : v.within() ? "ok" : "OUTSIDE";
    if (!v.is_input) {
      ++tested;
      outside += v.within() ? 0 : 1;
    }
    fmt::print(out, "{:<34} {:>9.3f} {:>8.3f} {:<6} {:>13.3f} {:>+7.1f}% {:>6.1f}%  {}\n", v.label, v.compute_scale,
               ms(v.measured_step_seconds), v.mean_step ? "mean" : "median", ms(v.predicted.step_seconds),
               100 * v.error, 100 * v.noise, verdict);
  }
  fmt::print(out, "{} of {} points within the target\n", tested - outside, tested);
}

void print_curves(std::FILE* out, const Analysis& a) {
  for (const PredictedCurve& c : a.curves) {
    fmt::print(out, "\nPredicted on link \"{}\" (alpha {:.1f} us, beta {:.1f} GB/s{}), compute x{:g}{}\n", c.link.name,
               1e6 * c.link.alpha_seconds, c.link.beta_bytes_per_second / 1e9,
               c.link.split_bytes > 0
                   ? fmt::format("; above {:.0f} KiB {:.1f} us, {:.1f} GB/s", c.link.split_bytes / 1024,
                                 1e6 * c.link.large_alpha_seconds, c.link.large_beta_bytes_per_second / 1e9)
                   : "",
               c.compute_scale, c.dp_on_threads ? ", DP on threads sharing memory" : ", DP over devices");
    fmt::print(out, "{:>7} {:>11} {:>10} {:>12} {:>11} {:>10} {:>13}\n", "workers", "DP step ms", "DP speedup",
               "DDP step ms", "DDP speedup", "DDP effic", "DDP exposed ms");
    for (const PredictedPoint& p : c.points) {
      fmt::print(out, "{:>7} {:>11.3f} {:>10.2f} {:>12.3f} {:>11.2f} {:>10.2f} {:>13.3f}\n", p.workers,
                 ms(p.dp.step_seconds), p.dp_speedup, ms(p.ddp.step_seconds), p.ddp_speedup, p.ddp_speedup / p.workers,
                 ms(p.ddp.exposed_comm_seconds));
    }
    fmt::print(out, "At 8 workers: {}\n", verdict_at_8(c));
  }
}

nlohmann::json prediction_json(const StepPrediction& p) {
  return {{"step_seconds", p.step_seconds},
          {"data_seconds", p.data_seconds},
          {"forward_seconds", p.forward_seconds},
          {"backward_seconds", p.backward_seconds},
          {"exposed_comm_seconds", p.exposed_comm_seconds},
          {"comm_seconds", p.comm_seconds},
          {"optimizer_seconds", p.optimizer_seconds},
          {"rank_skew_seconds", p.rank_skew_seconds},
          {"replicate_seconds", p.replicate_seconds},
          {"scatter_seconds", p.scatter_seconds},
          {"gather_seconds", p.gather_seconds},
          {"reduce_seconds", p.reduce_seconds},
          {"samples_per_second", p.samples_per_second}};
}

nlohmann::json profile_json(const StepProfile& p) {
  nlohmann::json gradients = nlohmann::json::array();
  for (const GradientReady& g : p.gradients) {
    gradients.push_back({{"ready_seconds", g.ready_seconds}, {"numel", g.numel}, {"bytes", g.bytes}});
  }
  return {{"batch_per_worker", p.batch_per_worker},
          {"data_seconds", p.data_seconds},
          {"forward_seconds", p.forward_seconds},
          {"loss_seconds", p.loss_seconds},
          {"backward_seconds", p.backward_seconds},
          {"ddp_backward_seconds", p.ddp_backward_seconds},
          {"hook_finish_seconds", p.hook_finish_seconds},
          {"buffer_bytes", p.buffer_bytes},
          {"optimizer_seconds", p.optimizer_seconds},
          {"gradients", gradients},
          {"parameter_bytes", p.parameter_bytes},
          {"input_bytes", p.input_bytes},
          {"output_bytes", p.output_bytes},
          {"replica_copy_seconds", p.replica_copy_seconds},
          {"gradient_clone_seconds", p.gradient_clone_seconds},
          {"gradient_add_seconds", p.gradient_add_seconds},
          {"output_copy_seconds", p.output_copy_seconds},
          {"wake_seconds", p.wake_seconds}};
}

nlohmann::json link_json(const Link& l) {
  return {{"name", l.name},
          {"alpha_seconds", l.alpha_seconds},
          {"beta_bytes_per_second", l.beta_bytes_per_second},
          {"split_bytes", l.split_bytes},
          {"large_alpha_seconds", l.large_alpha_seconds},
          {"large_beta_bytes_per_second", l.large_beta_bytes_per_second},
          {"source", l.source}};
}

std::ofstream open_for_writing(const std::string& path) {
  std::ofstream out(path);
  SYNCGRAD_CHECK(out, IOError, "syncgrad-bench: cannot write ", path, " (does its directory exist?)");
  return out;
}

void close_written(std::ofstream& out, const std::string& path) {
  out.flush();
  SYNCGRAD_CHECK(out, IOError, "syncgrad-bench: writing ", path, " failed");
}

}  // namespace

double speedup_of(const Measurements& m, const RunResult& r) {
  const MeasuredPoint* single = m.find("main", "single", 1);
  return single && single->result.samples_per_second > 0 ? r.samples_per_second / single->result.samples_per_second : 1;
}

void print_report(std::FILE* out, const ScalingOptions& o, const RunContext& context, const Measurements& m,
                  const Analysis& a) {
  fmt::print(out, "syncgrad-bench scaling: model {}, {} per worker and step, {} steps after {} warm-up, {} repeat(s)\n",
             o.base.model, o.base.batch, o.base.steps, o.base.warmup, o.repeats);
  fmt::print(out,
             "data: {} ({}); one compute thread per worker; DP = DataParallel on worker threads of this "
             "process, DDP = one process per worker over Gloo on 127.0.0.1\n",
             context.task_description, o.base.loader ? "through a DataLoader" : "one fixed batch");
  fmt::print(out, "machine: {} cores, load average {}, {}\n", context.cores, context.load_average, context.date);
  print_measured(out, m);
  print_sweeps(out, m);
  print_inputs(out, m, a);
  print_validation(out, a);
  print_curves(out, a);
}

void write_csv(const std::string& path, const Measurements& m, const Analysis& a) {
  std::ofstream out = open_for_writing(path);
  out << "kind,mode,workers,group,setting,link,compute_scale,samples_per_s,speedup,efficiency,step_ms,forward_ms,"
         "backward_ms,exposed_comm_ms,optimizer_ms,data_wait_ms,comm_ms,payload_bytes_per_step,peak_mib_worker0,"
         "peak_mib_max_other,noise,predicted_step_ms,error\n";
  for (const MeasuredPoint& p : m.points) {
    const RunResult& r = p.result;
    const Validation* v = nullptr;
    for (const Validation& candidate : a.validation) v = candidate.point == &p ? &candidate : v;
    double others = 0;
    for (size_t w = 1; w < r.peak_bytes.size(); ++w) others = std::max(others, r.peak_bytes[w]);
    const double speedup = speedup_of(m, r);
    out << fmt::format(
        "measured,{},{},{},{},,,{:.1f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},"
        "{:.0f},{:.3f},{:.3f},{:.4f},{},{}\n",
        r.config.mode, r.config.workers, p.group, p.setting, r.samples_per_second, speedup, speedup / r.config.workers,
        ms(measured_step_seconds(r)), ms(r.split.forward), ms(r.split.backward), ms(r.split.exposed_comm),
        ms(r.split.optimizer), ms(r.split.data_wait), ms(r.split.comm), r.payload_bytes_per_step,
        mb(r.peak_bytes.front()), mb(others), r.noise, v ? fmt::format("{:.4f}", ms(v->predicted.step_seconds)) : "",
        v ? fmt::format("{:.4f}", v->error) : "");
  }
  for (const PredictedCurve& c : a.curves) {
    for (const PredictedPoint& p : c.points) {
      for (const auto& [mode, step, speedup] :
           {std::tuple{"dp", p.dp, p.dp_speedup}, std::tuple{"ddp", p.ddp, p.ddp_speedup}}) {
        out << fmt::format(
            "predicted,{},{},,,{},{:g},{:.1f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},"
            "{:.4f},,,,,,\n",
            mode, p.workers, c.link.name, c.compute_scale, step.samples_per_second, speedup, speedup / p.workers,
            ms(step.step_seconds), ms(step.forward_seconds), ms(step.backward_seconds), ms(step.exposed_comm_seconds),
            ms(step.optimizer_seconds), ms(step.data_seconds), ms(step.comm_seconds));
      }
    }
  }
  close_written(out, path);
}

void write_json(const std::string& path, const ScalingOptions& o, const RunContext& context, const Measurements& m,
                const Analysis& a) {
  nlohmann::json runs = nlohmann::json::array();
  for (const MeasuredPoint& p : m.points) {
    nlohmann::json run = to_json(p.result);
    run["group"] = p.group;
    run["setting"] = p.setting;
    run["speedup"] = speedup_of(m, p.result);
    run["step_seconds"] = measured_step_seconds(p.result);
    nlohmann::json repeats = nlohmann::json::array();
    for (const RunResult& r : p.repeats) repeats.push_back(r.samples_per_second);
    run["repeat_samples_per_second"] = repeats;
    run.erase("config");
    run["mode"] = p.result.config.mode;
    run["workers"] = p.result.config.workers;
    run["bucket_cap_mb"] = p.result.config.bucket_cap_mb;
    run["overlap"] = p.result.config.overlap;
    run["hook"] = p.result.config.hook;
    runs.push_back(run);
  }
  nlohmann::json validation = nlohmann::json::array();
  for (const Validation& v : a.validation) {
    validation.push_back({{"point", v.label},
                          {"measured_step_seconds", v.measured_step_seconds},
                          {"measured_step", v.mean_step ? "mean" : "median"},
                          {"predicted", prediction_json(v.predicted)},
                          {"compute_scale", v.compute_scale},
                          {"error", v.error},
                          {"noise", v.noise},
                          {"profile_input", v.is_input},
                          {"within_target", v.within()}});
  }
  nlohmann::json curves = nlohmann::json::array();
  for (const PredictedCurve& c : a.curves) {
    nlohmann::json points = nlohmann::json::array();
    for (const PredictedPoint& p : c.points) {
      points.push_back({{"workers", p.workers},
                        {"dp", prediction_json(p.dp)},
                        {"ddp", prediction_json(p.ddp)},
                        {"dp_speedup", p.dp_speedup},
                        {"ddp_speedup", p.ddp_speedup}});
    }
    curves.push_back({{"link", link_json(c.link)},
                      {"compute_scale", c.compute_scale},
                      {"dp_on_threads", c.dp_on_threads},
                      {"points", points},
                      {"verdict_at_8", verdict_at_8(c)}});
  }
  nlohmann::json contention = nlohmann::json::object();
  for (const auto& [mode, factors] : a.contention) {
    for (const auto& [p, factor] : factors) contention[mode][std::to_string(p)] = factor;
  }
  nlohmann::json doc = {
      {"tool", "syncgrad-bench scaling"},
      {"model", o.base.model},
      {"data", context.task_description},
      {"loader", o.base.loader},
      {"batch_per_worker", o.base.batch},
      {"steps", o.base.steps},
      {"warmup", o.base.warmup},
      {"repeats", o.repeats},
      {"workers", o.workers},
      {"date", context.date},
      {"load_average", context.load_average},
      {"cores", context.cores},
      {"runs", runs},
      {"profile", profile_json(a.profile)},
      {"measured_link", a.measured_link ? link_json(a.measured_link->link) : nlohmann::json(nullptr)},
      {"contention", contention},
      {"validation", validation},
      {"target_error", kTargetError},
      {"predictions", curves},
  };
  std::ofstream out = open_for_writing(path);
  out << doc.dump(2) << "\n";
  close_written(out, path);
}

}  // namespace syncgrad::bench
