// Ranks with different numbers of batches under DistributedDataParallel::join (docs/GUIDE.md section 6,
// "Uneven inputs"). Each rank trains on its own, unpadded slice of Fashion-MNIST: rank r gets counts[r] batches
// of 16 samples. Start it with the launcher:
//   build/tools/syncgrad-launch --nproc-per-node 2 build/examples/uneven-join-example 10,13
// A third argument picks the mode: "join" (the default), "join-by-training" (divide_by_initial_world_size =
// false) or "no-join" (no guard: the longer rank's next step fails with an error naming the short rank).
// Each rank prints its batches, the steps it took part in after running out and the rank its parameters came
// from; rank 0 then checks that every rank holds the same parameters.
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "syncgrad.h"

using namespace syncgrad;
namespace dist = syncgrad::distributed;

namespace {

// Samples begin, begin + 1, ..., begin + count - 1 in order.
class SliceSampler : public data::Sampler {
 public:
  SliceSampler(int64_t begin, int64_t count) : begin_(begin), count_(count) {}
  int64_t size() const override { return count_; }
  std::vector<int64_t> indices() const override {
    std::vector<int64_t> order(static_cast<size_t>(count_));
    for (int64_t i = 0; i < count_; ++i) order[static_cast<size_t>(i)] = begin_ + i;
    return order;
  }

 private:
  int64_t begin_, count_;
};

std::vector<int64_t> parse_counts(const std::string& text) {
  std::vector<int64_t> counts;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    const long long value = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 0) {
      throw ValueError("uneven-join-example: batch counts must be non-negative integers separated by commas, "
                       "e.g. 10,13; got \"" + text + "\"");
    }
    counts.push_back(value);
  }
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 2 ? argv[2] : "join";
  try {
    if (mode != "join" && mode != "join-by-training" && mode != "no-join") {
      throw ValueError("uneven-join-example: unknown mode \"" + mode + "\"; choose join, join-by-training or no-join");
    }
    const std::vector<int64_t> counts = parse_counts(argc > 1 ? argv[1] : "10,13");
    auto group = dist::init_process_group({.backend = "gloo"});
    const int rank = group->rank();
    if (counts.size() != static_cast<size_t>(group->size())) {
      throw ValueError("uneven-join-example: " + std::to_string(counts.size()) + " batch counts for " +
                       std::to_string(group->size()) + " ranks; give one per rank");
    }
    const int64_t batch_size = 16;
    int64_t begin = 0;
    for (int r = 0; r < rank; ++r) begin += counts[static_cast<size_t>(r)] * batch_size;
    auto dataset = std::make_shared<data::MnistDataset>(data::default_fashion_mnist_dir(), /*train=*/true);
    auto sampler = std::make_shared<SliceSampler>(begin, counts[static_cast<size_t>(rank)] * batch_size);
    data::DataLoader loader(dataset, {.batch_size = batch_size, .sampler = sampler});

    auto model = models::make_model("mlp");
    dist::DistributedDataParallel ddp(model, group);
    optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
    std::optional<dist::Join> join;
    if (mode != "no-join") join.emplace(ddp, dist::JoinOptions{.divide_by_initial_world_size = mode == "join"});
    int64_t batches = 0;
    for (data::Batch& batch : loader) {
      opt.zero_grad();
      cross_entropy(ddp(batch.data), batch.target).backward();
      opt.step();
      ++batches;
    }
    if (join) join->finish();  // here a rank that ran out takes part in the others' steps until all ran out
    std::cout << "rank " << rank << ": " << batches << " batches";
    if (join) std::cout << ", took part in " << join->shadowed_steps() << " more steps, parameters from rank "
                        << join->source_rank();
    std::cout << "\n";
    if (!join) {  // the ranks are out of step: no more collectives
      dist::destroy_process_group();
      return 0;
    }
    // Every rank's parameters against rank 0's.
    bool identical = true;
    for (const auto& [name, p] : model->named_parameters()) {
      Tensor theirs = p.clone();
      group->broadcast(theirs, 0)->wait();
      identical = identical && max(abs(sub(theirs, p))).item<double>() == 0;
    }
    std::cout << "rank " << rank << ": parameters " << (identical ? "identical to" : "DIFFER from") << " rank 0's\n";
    dist::destroy_process_group();
    return identical ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << "uneven-join-example: " << e.what() << "\n";
    return 1;
  }
}
