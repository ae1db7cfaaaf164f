// Transforms: Normalize per channel, RandomCrop with padding, RandomHorizontalFlip, Compose, TransformDataset
// through a DataLoader (deterministic for any worker count), and their argument and shape errors.
#include <doctest/doctest.h>

#include <set>

#include "syncgrad.h"
#include "tests/check_error.h"

using namespace syncgrad;
using syncgrad::testing::check_error;

namespace {

// (C, H, W) f32 with value c * 100 + y * 10 + x.
Tensor ramp(int64_t c, int64_t h, int64_t w) {
  std::vector<float> v;
  for (int64_t i = 0; i < c; ++i)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) v.push_back(static_cast<float>(i * 100 + y * 10 + x));
  return from_vector(v, {c, h, w});
}

}  // namespace

TEST_CASE("Normalize subtracts the channel mean and divides by the channel std") {
  data::Normalize norm({1.0f, 100.0f}, {2.0f, 4.0f});
  Generator gen(0);
  std::vector<float> out = to_vector<float>(norm(ramp(2, 1, 2), gen));
  CHECK(out == std::vector<float>{-0.5f, 0.0f, 0.0f, 0.25f});
  check_error<ShapeError>([&] { norm(ramp(3, 1, 1), gen); }, {"3 channels", "2"});
  check_error<ValueError>([] { data::Normalize({0.f}, {0.f, 1.f}); }, {"mean has 1", "std 2"});
  check_error<ValueError>([] { data::Normalize({0.f}, {0.f}); }, {"std[0]", "> 0"});
  check_error<ShapeError>([&] { norm(zeros({2, 2}), gen); }, {"(C, H, W)", "[2, 2]"});
  check_error<DTypeError>([&] { norm(zeros({2, 1, 1}, {.dtype = DType::f64}), gen); }, {"float32", "float64"});
}

TEST_CASE("RandomCrop with padding: every crop is a window of the zero-padded image; offsets cover the range") {
  data::RandomCrop crop(4, 2);
  Tensor image = ramp(1, 4, 4);
  std::set<std::pair<int, int>> corners;
  Generator gen(9);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> out = to_vector<float>(crop(image, gen));
    REQUIRE(out.size() == 16);
    // Find the offset (dy, dx) in [-2, 2] that explains the crop.
    bool found = false;
    for (int dy = -2; dy <= 2 && !found; ++dy) {
      for (int dx = -2; dx <= 2 && !found; ++dx) {
        bool match = true;
        for (int y = 0; y < 4 && match; ++y)
          for (int x = 0; x < 4 && match; ++x) {
            int sy = y + dy, sx = x + dx;
            float want = (sy >= 0 && sy < 4 && sx >= 0 && sx < 4) ? float(sy * 10 + sx) : 0.0f;
            match = out[y * 4 + x] == want;
          }
        if (match) {
          corners.insert({dy, dx});
          found = true;
        }
      }
    }
    CHECK(found);
  }
  CHECK(corners.size() == 25);
  Generator g1(5), g2(5);
  CHECK(to_vector<float>(crop(image, g1)) == to_vector<float>(crop(image, g2)));
  check_error<ShapeError>([&] { data::RandomCrop(9, 2)(image, gen); }, {"smaller than the crop size 9"});
  check_error<ValueError>([] { data::RandomCrop(0); }, {"size"});
  check_error<ValueError>([] { data::RandomCrop(3, -1); }, {"padding"});
}

TEST_CASE("RandomHorizontalFlip mirrors columns with probability p") {
  Tensor image = ramp(2, 2, 3);
  Generator gen(1);
  CHECK(to_vector<float>(data::RandomHorizontalFlip(0.0)(image, gen)) == to_vector<float>(image));
  std::vector<float> flipped = to_vector<float>(data::RandomHorizontalFlip(1.0)(image, gen));
  CHECK(flipped == std::vector<float>{2, 1, 0, 12, 11, 10, 102, 101, 100, 112, 111, 110});
  data::RandomHorizontalFlip half;
  int flips = 0;
  for (int i = 0; i < 1000; ++i) flips += to_vector<float>(half(image, gen))[0] == 2.0f;
  CHECK(flips > 430);
  CHECK(flips < 570);
  check_error<ValueError>([] { data::RandomHorizontalFlip(1.5); }, {"p must be in [0, 1]", "1.5"});
}

TEST_CASE("TransformDataset composes per dataset; a DataLoader gives the same augmented batches for 0 and 2 workers") {
  auto base = std::make_shared<data::TensorDataset>(rand({20, 3, 8, 8}), arange(20));
  auto augment = std::make_shared<data::Compose>(std::vector<std::shared_ptr<const data::Transform>>{
      std::make_shared<data::RandomCrop>(8, 1), std::make_shared<data::RandomHorizontalFlip>(),
      std::make_shared<data::Normalize>(std::vector<float>{0.5f, 0.5f, 0.5f},
                                        std::vector<float>{0.25f, 0.25f, 0.25f})});
  auto ds = std::make_shared<data::TransformDataset>(base, augment);
  CHECK(to_vector<float>(ds->get(3).data) == to_vector<float>(ds->get(3).data));
  std::vector<float> runs[2];
  for (int workers : {0, 2}) {
    data::DataLoader loader(ds, {.batch_size = 6, .shuffle = true, .num_workers = workers, .seed = 2});
    for (data::Batch& batch : loader) {
      CHECK(batch.data.sizes()[1] == 3);
      std::vector<float> v = to_vector<float>(batch.data);
      runs[workers / 2].insert(runs[workers / 2].end(), v.begin(), v.end());
    }
  }
  CHECK(runs[0] == runs[1]);
  check_error<ValueError>([&] { data::TransformDataset(base, nullptr); }, {"transform"});
}
