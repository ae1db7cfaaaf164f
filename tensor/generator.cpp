// Generator draws on the host and the process-wide default generator.
#include "tensor/generator.h"

#include "tensor/philox.h"

namespace syncgrad {

uint64_t Generator::next_u64() {
  philox::Block b = philox::draw(seed_, reserve(1));
  return (static_cast<uint64_t>(b.w[0]) << 32) | b.w[1];
}

uint64_t Generator::next_below(uint64_t bound) {
  // Rejection sampling: drop draws from the incomplete top range so every value is equally likely.
  uint64_t limit = UINT64_MAX - (UINT64_MAX % bound);
  while (true) {
    uint64_t v = next_u64();
    if (v < limit) return v % bound;
  }
}

double Generator::next_double() {
  philox::Block b = philox::draw(seed_, reserve(1));
  return philox::uniform_double(b.w[0], b.w[1]);
}

Generator Generator::split(uint64_t stream) const {
  uint64_t z = seed_ + 0x9E3779B97F4A7C15ull * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return Generator(z ^ (z >> 31));
}

Generator& default_generator() {
  static Generator gen(0);
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace syncgrad
