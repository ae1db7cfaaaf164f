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

namespace {

struct Hop {
  int64_t world = 1;
  int64_t taken = 0;  // indices each rank takes before the job stops (-1: to the end of the epoch)
};

// Runs epoch `epoch` of a dataset of n through jobs of the hops' world sizes, each resuming where the previous
// stopped (resume_epoch_at with the previous job's global_position); returns every index taken, and checks
// the positions on the way.
Indices run_hops(int64_t n, const std::vector<Hop>& hops, bool drop_last, int64_t epoch) {
  Indices seen;
  int64_t position = 0;
  for (const Hop& hop : hops) {
    int64_t next_position = -1;
    for (int64_t rank = 0; rank < hop.world; ++rank) {
      DistributedSampler s(n, hop.world, rank, true, 11, drop_last);
      s.set_epoch(epoch + 1);  // another epoch first: resume_epoch_at selects the resumed one
      s.resume_epoch_at(epoch, position);
      CHECK(s.epoch() == epoch);
      CHECK(s.epoch_start() == position);
      const Indices mine = s.indices();
      REQUIRE(static_cast<int64_t>(mine.size()) == s.size());
      const int64_t taken = hop.taken < 0 ? s.size() : std::min(hop.taken, s.size());
      seen.insert(seen.end(), mine.begin(), mine.begin() + taken);
      const int64_t after = s.global_position(epoch, taken);
      if (next_position >= 0) CHECK(after == next_position);  // the same on every rank
      next_position = after;
    }
    if (hop.taken >= 0) CHECK(next_position == std::min(n, position + hop.taken * hop.world));
    position = next_position;
  }
  return seen;
}

}  // namespace

TEST_CASE("DistributedSampler resumed at another world size sees every index once, besides its own padding") {
  for (int64_t n : {0, 1, 5, 7, 10, 13, 64}) {
    for (bool drop_last : {false, true}) {
      for (int64_t w : {1, 2, 3, 4}) {
        for (int64_t w2 : {1, 2, 3, 5}) {
          DistributedSampler first(n, w, 0, true, 11, drop_last);
          for (int64_t k = 0; k < first.size(); ++k) {  // the first job stops mid-epoch after k per rank
            CAPTURE(n); CAPTURE(drop_last); CAPTURE(w); CAPTURE(w2); CAPTURE(k);
            const int64_t position = k * w;
            REQUIRE(position < n);  // mid-epoch the consumed entries are all real ones
            Indices seen = run_hops(n, {{w, k}, {w2, -1}}, drop_last, 2);
            // The first k * w entries of the order, then order[position:] split among w2 ranks.
            const int64_t remaining = n - position;
            const int64_t extra = drop_last ? -(remaining % w2) : (w2 - remaining % w2) % w2;
            CHECK(static_cast<int64_t>(seen.size()) == n + extra);
            // Each index once; the padding repeats the remaining entries (order[position:]) cyclically from
            // their head, and drop_last leaves out the last of them.
            DistributedSampler order(n, 1, 0, true, 11, false);
            order.set_epoch(2);
            const Indices full = order.indices();
            std::map<int64_t, int> expected, count;
            for (int64_t i = 0; i < n; ++i) expected[i] = 1;
            for (int64_t j = 0; j < extra; ++j) ++expected[full[static_cast<size_t>(position + j % remaining)]];
            for (int64_t j = 0; j < -extra; ++j) --expected[full[static_cast<size_t>(n - 1 - j)]];
            for (int64_t i : seen) ++count[i];
            for (int64_t i = 0; i < n; ++i) CHECK(count[i] == expected[i]);
          }
        }
      }
    }
  }
}

TEST_CASE("DistributedSampler resumed at its own world size continues the shard; later epochs are ordinary") {
  for (int64_t n : {12, 13, 30}) {
    for (int64_t w : {1, 2, 3}) {
      for (int64_t k : {0, 1, 3}) {
        CAPTURE(n); CAPTURE(w); CAPTURE(k);
        for (int64_t rank = 0; rank < w; ++rank) {
          DistributedSampler plain(n, w, rank, true, 4);
          plain.set_epoch(1);
          DistributedSampler resumed(n, w, rank, true, 4);
          resumed.resume_epoch_at(1, k * w);
          const Indices tail = resumed.indices(), all = plain.indices();
          // Without padding (w divides n) the resumed shard is the plain one's tail, index for index.
          if (n % w == 0) CHECK(tail == Indices(all.begin() + k, all.end()));
          CHECK(resumed.size() == plain.size() - k);
          resumed.set_epoch(2);
          plain.set_epoch(2);
          CHECK(resumed.epoch_start() == 0);
          CHECK(resumed.indices() == plain.indices());
          // The end of an epoch is its size, not its padding.
          CHECK(resumed.global_position(2, resumed.size()) == n);
          CHECK(resumed.global_position(1, resumed.size_of_epoch(1)) == n);
        }
      }
    }
  }
}

TEST_CASE("DistributedSampler: 2 -> 1 -> 2 ranks within one epoch, and the resume arguments") {
  for (int64_t n : {9, 10, 31}) {
    for (bool drop_last : {false, true}) {
      CAPTURE(n); CAPTURE(drop_last);
      Indices seen = run_hops(n, {{2, 2}, {1, 3}, {2, -1}}, drop_last, 0);
      std::sort(seen.begin(), seen.end());
      const int64_t remaining = n - 2 * 2 - 3;
      Indices unique = seen;
      unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
      CHECK(static_cast<int64_t>(seen.size() - unique.size()) == (drop_last ? 0 : remaining % 2));
      CHECK(static_cast<int64_t>(unique.size()) == n - (drop_last ? remaining % 2 : 0));
    }
  }
  DistributedSampler s(10, 2, 0);
  check_error<ValueError>([&] { s.resume_epoch_at(0, 11); }, {"start 11", "[0, 10]"});
  check_error<ValueError>([&] { s.resume_epoch_at(0, -1); }, {"start -1"});
  check_error<ValueError>([&] { s.resume_epoch_at(-2, 0); }, {"epoch must be >= 0", "-2"});
  check_error<ValueError>([&] { s.global_position(0, 6); }, {"taken 6", "[0, 5]"});
}
