// Generator: a seeded source of random numbers built on Philox (tensor/philox.h). Its state is (seed,
// offset); each draw of n elements uses counters offset..offset+n-1 and then advances the offset, so results
// depend only on the seed and the sequence of draws, never on the machine, the thread count or the device.
// split(k) derives an independent generator (for worker k, rank k, ...).
#pragma once

#include <cstdint>

namespace syncgrad {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}

  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void manual_seed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  void set_state(uint64_t seed, uint64_t offset) {
    seed_ = seed;
    offset_ = offset;
  }
  // Reserves `n` counters and returns the first (for kernels that draw element i at first + i).
  uint64_t reserve(uint64_t n) {
    uint64_t first = offset_;
    offset_ += n;
    return first;
  }
  // A uniformly distributed 64-bit value (one counter).
  uint64_t next_u64();
  // Uniform integer in [0, bound) without modulo bias; bound > 0.
  uint64_t next_below(uint64_t bound);
  double next_double();  // [0, 1)
  // An independent generator whose seed mixes this seed with `stream` (SplitMix64).
  Generator split(uint64_t stream) const;

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The process-wide default generator used when none is passed.
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace syncgrad
