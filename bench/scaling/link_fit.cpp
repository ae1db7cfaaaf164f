// fit_link: a 2x2 weighted least-squares solve per size range.
#include "bench/scaling/link_fit.h"

#include <fmt/format.h>

#include <cmath>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::bench {
namespace {

struct Pair {
  double alpha, beta;
  bool bandwidth_only = false;  // the times did not grow with size: fitted through the origin instead
};

Pair fit_pair(const std::vector<AllreduceSample>& samples, int p) {
  SYNCGRAD_CHECK(samples.size() >= 2, ValueError, "fit_link: needs >= 2 allreduce sizes, got ", samples.size());
  // t ~ a * u + b * v with u = 2(p-1), v = 2(p-1)/p * bytes, a = alpha, b = 1/beta; divided by t.
  double uu = 0, uv = 0, vv = 0, u1 = 0, v1 = 0;
  for (const AllreduceSample& s : samples) {
    SYNCGRAD_CHECK(!(s.seconds <= 0), ValueError, "fit_link: an allreduce time is not positive");
    const double u = 2.0 * (p - 1) / s.seconds;
    const double v = 2.0 * (p - 1) / p * s.bytes / s.seconds;
    uu += u * u, uv += u * v, vv += v * v, u1 += u, v1 += v;
  }
  const double det = uu * vv - uv * uv;
  double alpha = det != 0 ? (u1 * vv - v1 * uv) / det : 0;
  double inverse_beta = det != 0 ? (uu * v1 - uv * u1) / det : v1 / vv;
  // A negative latency, or times that fall with size (noise on a loaded machine), leave no line to fit: the
  // bandwidth alone through the origin (always positive) stands in, flagged, instead of failing the bench.
  const bool bandwidth_only = inverse_beta <= 0;
  if (alpha < 0 || bandwidth_only) {
    alpha = 0;
    inverse_beta = v1 / vv;
  }
  return {alpha, 1 / inverse_beta, bandwidth_only};
}

}  // namespace

LinkFit fit_link(const std::vector<AllreduceSample>& samples, int p, double split_bytes) {
  SYNCGRAD_CHECK(p >= 2, ValueError, "fit_link: needs allreduce times of >= 2 workers, got ", p);
  std::vector<AllreduceSample> small, large;
  for (const AllreduceSample& s : samples) (split_bytes > 0 && s.bytes > split_bytes ? large : small).push_back(s);
  LinkFit fit;
  fit.link.name = "measured";
  if (small.empty() || large.empty()) {
    const Pair one = fit_pair(samples, p);
    fit.link.alpha_seconds = one.alpha;
    fit.link.beta_bytes_per_second = one.beta;
    fit.times_did_not_grow = one.bandwidth_only;
  } else {
    const Pair lo = fit_pair(small, p), hi = fit_pair(large, p);
    fit.times_did_not_grow = lo.bandwidth_only || hi.bandwidth_only;
    fit.link.alpha_seconds = lo.alpha;
    fit.link.beta_bytes_per_second = lo.beta;
    fit.link.split_bytes = split_bytes;
    fit.link.large_alpha_seconds = hi.alpha;
    fit.link.large_beta_bytes_per_second = hi.beta;
  }
  for (const AllreduceSample& s : samples) {
    const double predicted = ring_allreduce_seconds(s.bytes, p, fit.link);
    fit.worst_relative_error = std::max(fit.worst_relative_error, std::abs(predicted - s.seconds) / s.seconds);
  }
  fit.link.source = fmt::format(
      "fitted here to {}-worker allreduce times ({:.0f} KiB .. {:.0f} MiB over 127.0.0.1, "
      "Gloo{}), worst residual {:.0f}%{}",
      p, samples.front().bytes / 1024, samples.back().bytes / (1 << 20),
      fit.link.split_bytes > 0
          ? fmt::format(", one fit up to {:g} MiB and one above", fit.link.split_bytes / (1 << 20))
          : "",
      100 * fit.worst_relative_error,
      fit.times_did_not_grow ? "; the times did not grow with size (a loaded machine?): bandwidth alone, "
                               "alpha 0; rerun quieter or with more --repeats"
                             : "");
  return fit;
}

}  // namespace syncgrad::bench
