// View ops share storage and compute the right sizes/strides; reshape copies only when it must.
#include <doctest/doctest.h>

#include "syncgrad.h"

using namespace syncgrad;

TEST_CASE("views share storage") {
  Tensor t = arange(12).reshape({3, 4});
  Tensor v = t.view({4, 3});
  CHECK(v.impl()->storage() == t.impl()->storage());
  raw::fill_(raw::select(t, 0, 1), 7);
  CHECK(to_vector<int64_t>(v)[4] == 7);
}

TEST_CASE("transpose, permute and contiguous") {
  Tensor t = arange(6).reshape({2, 3});
  Tensor tt = t.transpose(0, 1);
  CHECK(tt.sizes() == Shape{3, 2});
  CHECK(tt.strides() == Shape{1, 3});
  CHECK_FALSE(tt.is_contiguous());
  CHECK(to_vector<int64_t>(tt.contiguous()) == std::vector<int64_t>{0, 3, 1, 4, 2, 5});
  Tensor p = arange(24).reshape({2, 3, 4}).permute({2, 0, 1});
  CHECK(p.sizes() == Shape{4, 2, 3});
  CHECK(to_vector<int64_t>(p.contiguous())[1] == 4);
  CHECK_THROWS_AS(t.permute({0, 0}), ShapeError);
  CHECK_THROWS_AS(t.permute({0}), ShapeError);
}

TEST_CASE("view on incompatible strides is an error naming both shapes; reshape copies") {
  Tensor tt = arange(6).reshape({2, 3}).transpose(0, 1);
  try {
    tt.view({6});
    FAIL("expected ShapeError");
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    CHECK(msg.find("view") != std::string::npos);
    CHECK(msg.find("[6]") != std::string::npos);
    CHECK(msg.find("[3, 2]") != std::string::npos);
  }
  Tensor r = tt.reshape({6});
  CHECK(to_vector<int64_t>(r) == std::vector<int64_t>{0, 3, 1, 4, 2, 5});
  CHECK(r.impl()->storage() != tt.impl()->storage());
  CHECK_THROWS_AS(arange(6).view({4, -1}), ShapeError);
  CHECK_THROWS_AS(arange(6).view({-1, -1}), ShapeError);
  CHECK(arange(6).view({-1, 2}).sizes() == Shape{3, 2});
}

TEST_CASE("view splitting and merging dims of a non-contiguous tensor when possible") {
  Tensor t = arange(24).reshape({2, 3, 4}).permute({1, 0, 2});  // (3, 2, 4), last dim contiguous
  Tensor v = t.view({3, 2, 2, 2});
  CHECK(v.impl()->storage() == t.impl()->storage());
  CHECK(to_vector<int64_t>(v.contiguous()) == to_vector<int64_t>(t.contiguous()));
}

TEST_CASE("narrow, slice, select, squeeze, unsqueeze, flatten, expand") {
  Tensor t = arange(12).reshape({3, 4});
  CHECK(to_vector<int64_t>(t.narrow(1, 1, 2).contiguous()) == std::vector<int64_t>{1, 2, 5, 6, 9, 10});
  CHECK(to_vector<int64_t>(raw::slice(t, 1, 0, 4, 2).contiguous()) == std::vector<int64_t>{0, 2, 4, 6, 8, 10});
  CHECK(to_vector<int64_t>(t.select(0, -1)) == std::vector<int64_t>{8, 9, 10, 11});
  CHECK_THROWS_AS(t.select(0, 3), IndexError);
  CHECK_THROWS_AS(t.narrow(1, 3, 2), IndexError);
  CHECK_THROWS_AS(t.size(2), IndexError);
  CHECK(t.unsqueeze(0).sizes() == Shape{1, 3, 4});
  CHECK(t.unsqueeze(-1).sizes() == Shape{3, 4, 1});
  CHECK(t.unsqueeze(0).squeeze(0).sizes() == Shape{3, 4});
  CHECK(raw::squeeze(zeros({1, 2, 1})).sizes() == Shape{2});
  CHECK(zeros({2, 3, 4}).flatten(1).sizes() == Shape{2, 12});
  Tensor e = tensor({1.f, 2.f}).unsqueeze(0).expand({3, 2});
  CHECK(e.strides() == Shape{0, 1});
  CHECK(to_vector<float>(e.contiguous()) == std::vector<float>{1, 2, 1, 2, 1, 2});
  CHECK(zeros({3, 1}).expand({2, 3, 5}).sizes() == Shape{2, 3, 5});
  CHECK_THROWS_AS(zeros({3, 2}).expand({3, 4}), ShapeError);
}

TEST_CASE("broadcast_shapes follows NumPy rules and names both shapes on error") {
  CHECK(broadcast_shapes({3, 1}, {4}, "add") == Shape{3, 4});
  CHECK(broadcast_shapes({}, {2, 2}, "add") == Shape{2, 2});
  try {
    broadcast_shapes({2, 3}, {4}, "add");
    FAIL("expected ShapeError");
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    CHECK(msg.find("add") != std::string::npos);
    CHECK(msg.find("[2, 3]") != std::string::npos);
    CHECK(msg.find("[4]") != std::string::npos);
  }
}

TEST_CASE("raw sum and sum_to") {
  Tensor t = arange(6).reshape({2, 3}).to(DType::f32);
  CHECK(to_vector<float>(raw::sum(t, {0})) == std::vector<float>{3, 5, 7});
  CHECK(to_vector<float>(raw::sum(t, {1}, true)) == std::vector<float>{3, 12});
  CHECK(raw::sum(t, {1}, true).sizes() == Shape{2, 1});
  CHECK(raw::sum(t).item<float>() == 15.f);
  CHECK(raw::sum(arange(5)).dtype() == DType::i64);
  CHECK(to_vector<float>(raw::sum_to(t, {1, 3})) == std::vector<float>{3, 5, 7});
  CHECK(to_vector<float>(raw::sum_to(t, {3})) == std::vector<float>{3, 5, 7});
  CHECK(raw::sum(t.transpose(0, 1), {0}).sizes() == Shape{2});
  CHECK(to_vector<float>(raw::sum(t.transpose(0, 1), {0})) == std::vector<float>{3, 12});
  CHECK(raw::sum(ones({1000}, {.dtype = DType::bf16})).item<float>() == 1000.f);
}

TEST_CASE("view, reshape and expand reject target shapes whose element count overflows") {
  // 11 * 1676976733973595602 = 2^64 + 6: unchecked, the product wraps to 6 and the view is accepted.
  const Shape wraps_to_six{11, 1676976733973595602};
  CHECK_THROWS_WITH_AS(arange(6).view(wraps_to_six),
                       doctest::Contains("view: shape [11, 1676976733973595602] has 2^63"), ValueError);
  CHECK_THROWS_AS(arange(6).reshape(wraps_to_six), ValueError);
  constexpr int64_t huge = int64_t{1} << 40;
  CHECK_THROWS_WITH_AS(arange(1).expand({huge, huge}),
                       doctest::Contains("expand: shape [1099511627776, 1099511627776] has 2^63"), ValueError);
  CHECK(arange(1).expand({huge, 8}).numel() == huge * 8);
}

TEST_CASE("expand rejects a negative size other than -1, naming it") {
  CHECK_THROWS_WITH_AS(arange(1).expand({-3}), doctest::Contains("expand: invalid size -3 for dimension 0"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(arange(1).expand({-1, 4}),
                       doctest::Contains("expand: invalid size -1 for a new leading dimension"), ShapeError);
  CHECK(arange(3).reshape({3, 1}).expand({-1, 4}).sizes() == Shape{3, 4});
}
