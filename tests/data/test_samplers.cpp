// Samplers: sequential and seeded random order, batching, and DistributedSampler against PyTorch's semantics
// (the worked N=10, R=4 example, then coverage / disjointness / equal-length / determinism properties).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <vector>

#include "syncgrad.h"
#include "tests/check_error.h"

using namespace syncgrad;
using data::BatchSampler;
using data::DistributedSampler;
using data::RandomSampler;
using data::SequentialSampler;
using syncgrad::testing::check_error;
using Indices = std::vector<int64_t>;

namespace {

Indices iota(int64_t n) {
  Indices out(static_cast<size_t>(n));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

bool is_permutation_of_range(Indices v, int64_t n) {
  std::sort(v.begin(), v.end());
  return v == iota(n);
}

std::vector<Indices> shards(int64_t n, int64_t r, bool shuffle, uint64_t seed, bool drop_last, int64_t epoch) {
  std::vector<Indices> out;
  for (int64_t rank = 0; rank < r; ++rank) {
    DistributedSampler s(n, r, rank, shuffle, seed, drop_last);
    s.set_epoch(epoch);
    out.push_back(s.indices());
  }
  return out;
}

// Rebuilds the epoch's full list from the shards: position rank + i * R holds shards[rank][i].
Indices interleave(const std::vector<Indices>& parts) {
  const size_t r = parts.size();
  Indices out(parts.empty() ? 0 : parts[0].size() * r);
  for (size_t rank = 0; rank < r; ++rank) {
    for (size_t i = 0; i < parts[rank].size(); ++i) out[rank + i * r] = parts[rank][i];
  }
  return out;
}

}  // namespace

TEST_CASE("SequentialSampler yields 0..n-1") {
  CHECK(SequentialSampler(5).indices() == Indices{0, 1, 2, 3, 4});
  CHECK(SequentialSampler(0).indices().empty());
  CHECK(SequentialSampler(5).size() == 5);
  check_error<ValueError>([] { SequentialSampler(-1); }, {"SequentialSampler", "n must be >= 0", "-1"});
}

TEST_CASE("RandomSampler is a seeded permutation that repeats without set_epoch and changes with it") {
  RandomSampler s(50, 7);
  Indices e0 = s.indices();
  CHECK(is_permutation_of_range(e0, 50));
  CHECK(e0 != iota(50));
  CHECK(s.indices() == e0);  // no set_epoch: the same order again
  CHECK(RandomSampler(50, 7).indices() == e0);
  CHECK(RandomSampler(50, 8).indices() != e0);
  s.set_epoch(1);
  Indices e1 = s.indices();
  CHECK(is_permutation_of_range(e1, 50));
  CHECK(e1 != e0);
  s.set_epoch(0);
  CHECK(s.indices() == e0);
  CHECK(RandomSampler(0, 7).indices().empty());
}

TEST_CASE("BatchSampler groups indices, keeping or dropping the short last batch") {
  auto seq = std::make_shared<SequentialSampler>(7);
  BatchSampler keep(seq, 3, false);
  CHECK(keep.num_batches() == 3);
  CHECK(keep.batches() == std::vector<Indices>{{0, 1, 2}, {3, 4, 5}, {6}});
  BatchSampler drop(seq, 3, true);
  CHECK(drop.num_batches() == 2);
  CHECK(drop.batches() == std::vector<Indices>{{0, 1, 2}, {3, 4, 5}});
  CHECK(BatchSampler(std::make_shared<SequentialSampler>(6), 3, true).batches().size() == 2);
  CHECK(BatchSampler(std::make_shared<SequentialSampler>(0), 3).batches().empty());

  auto rnd = std::make_shared<RandomSampler>(10, 3);
  BatchSampler shuffled(rnd, 4);
  Indices flat;
  for (const Indices& b : shuffled.batches()) flat.insert(flat.end(), b.begin(), b.end());
  CHECK(flat == rnd->indices());
  shuffled.set_epoch(2);  // forwarded to the wrapped sampler
  CHECK(rnd->indices() != RandomSampler(10, 3).indices());

  check_error<ValueError>([&] { BatchSampler(seq, 0); }, {"batch_size must be >= 1", "0"});
  check_error<ValueError>([] { BatchSampler(nullptr, 2); }, {"sampler must not be null"});
}

TEST_CASE("DistributedSampler: worked example N=10, R=4 without shuffle") {
  SUBCASE("padding (drop_last=false): num_samples 3, list 0..9,0,1") {
    DistributedSampler s0(10, 4, 0, false);
    CHECK(s0.size() == 3);
    CHECK(s0.total_size() == 12);
    std::vector<Indices> got = shards(10, 4, false, 0, false, 0);
    CHECK(got[0] == Indices{0, 4, 8});
    CHECK(got[1] == Indices{1, 5, 9});
    CHECK(got[2] == Indices{2, 6, 0});
    CHECK(got[3] == Indices{3, 7, 1});
  }
  SUBCASE("drop_last=true: num_samples 2") {
    DistributedSampler s0(10, 4, 0, false, 0, true);
    CHECK(s0.size() == 2);
    CHECK(s0.total_size() == 8);
    std::vector<Indices> got = shards(10, 4, false, 0, true, 0);
    CHECK(got[0] == Indices{0, 4});
    CHECK(got[1] == Indices{1, 5});
    CHECK(got[2] == Indices{2, 6});
    CHECK(got[3] == Indices{3, 7});
  }
}

TEST_CASE("DistributedSampler repeats the whole list when padding exceeds N") {
  // N=2, R=7: num_samples 1, total 7, list 0,1,0,1,0,1,0.
  CHECK(interleave(shards(2, 7, false, 0, false, 0)) == Indices{0, 1, 0, 1, 0, 1, 0});
  // N=1, R=4: every rank gets index 0; with drop_last nobody gets anything.
  CHECK(interleave(shards(1, 4, false, 0, false, 0)) == Indices{0, 0, 0, 0});
  CHECK(interleave(shards(1, 4, false, 0, true, 0)).empty());
}

TEST_CASE("DistributedSampler properties over N, R, epochs and shuffle") {
  for (int64_t n : {0, 1, 5, 10, 17, 100}) {
    for (int64_t r : {1, 2, 3, 4, 7}) {
      for (bool shuffle : {false, true}) {
        for (bool drop_last : {false, true}) {
          for (int64_t epoch : {0, 1, 5}) {
            CAPTURE(n);
            CAPTURE(r);
            CAPTURE(shuffle);
            CAPTURE(drop_last);
            CAPTURE(epoch);
            const int64_t num_samples = (drop_last && n % r != 0) ? n / r : (n + r - 1) / r;
            std::vector<Indices> parts = shards(n, r, shuffle, 42, drop_last, epoch);
            for (const Indices& p : parts) CHECK(static_cast<int64_t>(p.size()) == num_samples);

            std::map<int64_t, int64_t> count;
            for (const Indices& p : parts) {
              for (int64_t i : p) {
                CHECK(i >= 0);
                CHECK(i < n);
                ++count[i];
              }
            }
            const int64_t total = num_samples * r;
            int64_t duplicates = 0;
            for (const auto& [index, c] : count) duplicates += c - 1;
            if (drop_last) {
              CHECK(duplicates == 0);  // disjoint, total_size distinct indices
              CHECK(static_cast<int64_t>(count.size()) == total);
            } else {
              CHECK(static_cast<int64_t>(count.size()) == n);  // every index covered
              CHECK(duplicates == total - n);                  // overlap is exactly the padding
            }

            // Every rank saw the same underlying list: interleaving the shards rebuilds it.
            Indices list = interleave(parts);
            Indices head = iota(n);
            if (shuffle) {
              Generator g(42 + static_cast<uint64_t>(epoch));
              head = to_vector<int64_t>(randperm(n, &g));
            }
            for (size_t i = 0; i < list.size(); ++i) CHECK(list[i] == head[i % static_cast<size_t>(n)]);

            // Determinism: a second construction gives the same shards.
            CHECK(shards(n, r, shuffle, 42, drop_last, epoch) == parts);
          }
        }
      }
    }
  }
}

TEST_CASE("DistributedSampler shuffles per epoch (seed + epoch) and keeps the epoch") {
  DistributedSampler s(100, 3, 1, true, 5);
  CHECK(s.epoch() == 0);
  Indices e0 = s.indices();
  s.set_epoch(1);
  CHECK(s.epoch() == 1);
  Indices e1 = s.indices();
  CHECK(e0 != e1);
  CHECK(interleave(shards(100, 3, true, 5, false, 0)) != interleave(shards(100, 3, true, 5, false, 1)));
  // seed + epoch: (seed 5, epoch 1) matches (seed 6, epoch 0).
  CHECK(shards(100, 3, true, 5, false, 1) == shards(100, 3, true, 6, false, 0));
  // Unshuffled order does not depend on the epoch.
  CHECK(shards(17, 4, false, 0, false, 0) == shards(17, 4, false, 0, false, 3));
}

TEST_CASE("DistributedSampler validates its arguments") {
  check_error<ValueError>([] { DistributedSampler(10, 0, 0); }, {"num_replicas must be >= 1", "got 0"});
  check_error<ValueError>([] { DistributedSampler(10, 4, 4); }, {"rank 4", "[0, 3]", "num_replicas 4"});
  check_error<ValueError>([] { DistributedSampler(10, 4, -1); }, {"rank -1", "[0, 3]"});
  check_error<ValueError>([] { DistributedSampler(-3, 2, 0); }, {"dataset_size must be >= 0", "-3"});
}
