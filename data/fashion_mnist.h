// Fashion-MNIST (or MNIST) from a directory of IDX files: normalised f32 images and i64 labels.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace syncgrad::data {

struct MnistSplit {
  Tensor images;  // (N, 1, 28, 28) f32, normalised: (x / 255 - mean) / std
  Tensor labels;  // (N) i64 in [0, 10)
};

// $SYNCGRAD_DATA_DIR when set and non-empty, else "/usr/share/datasets/fashion-mnist" (Debian's
// dataset-fashion-mnist package).
std::string default_fashion_mnist_dir();

// train=true reads train-images-idx3-ubyte(.gz) + train-labels-idx1-ubyte(.gz); false the t10k files. The
// gzipped name is preferred when both exist. Throws IOError (missing files, with a hint) or ValueError (bad
// content: magic, truncation, image/label count mismatch, label >= 10, images not 28x28).
MnistSplit load_fashion_mnist(const std::string& dir, bool train, double mean = 0.2860, double std = 0.3530);

}  // namespace syncgrad::data
