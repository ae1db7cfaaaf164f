// Samplers: the order in which a dataset's indices are visited during one epoch. DistributedSampler splits that
// order between ranks with PyTorch's torch.utils.data.DistributedSampler semantics (the shuffled order itself
// comes from syncgrad's Philox generator, so it differs from PyTorch's for the same seed).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace syncgrad::data {

class Sampler {
 public:
  virtual ~Sampler();
  // Number of indices one epoch yields.
  virtual int64_t size() const = 0;
  // The indices of the current epoch.
  virtual std::vector<int64_t> indices() const = 0;
  // Selects the epoch; samplers whose order does not depend on it ignore it.
  virtual void set_epoch(int64_t) {}
};

// 0, 1, ..., n-1.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices() const override;

 private:
  int64_t n_;
};

// A permutation of 0..n-1 drawn with randperm from Generator(seed).split(epoch). Without set_epoch every call
// of indices() returns the same order (epoch 0); call set_epoch(e) before each epoch to reshuffle.
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(int64_t n, uint64_t seed = 0);
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices() const override;
  void set_epoch(int64_t epoch) override { epoch_ = epoch; }

 private:
  int64_t n_;
  uint64_t seed_;
  int64_t epoch_ = 0;
};

// Groups another sampler's indices into batches of batch_size; the last batch is shorter unless drop_last.
class BatchSampler {
 public:
  BatchSampler(std::shared_ptr<Sampler> sampler, int64_t batch_size, bool drop_last = false);
  int64_t num_batches() const;
  std::vector<std::vector<int64_t>> batches() const;
  void set_epoch(int64_t epoch) { sampler_->set_epoch(epoch); }

 private:
  std::shared_ptr<Sampler> sampler_;
  int64_t batch_size_;
  bool drop_last_;
};

// Rank `rank`'s share of a dataset of dataset_size examples among num_replicas ranks, as in PyTorch:
// num_samples = floor(N / R) when drop_last and R does not divide N, else ceil(N / R); total_size =
// num_samples * R. The epoch's list is randperm(N) from Generator(seed + epoch) when shuffle, else 0..N-1; it is
// padded to total_size by repeating its head (the whole list again as often as needed) or, with drop_last,
// truncated to total_size. Rank r takes list[r], list[r + R], ... (list[r : total_size : R]).
//
// Resuming at another world size (elastic): after every rank of a job of R ranks took its first k indices,
// that job consumed the first k * R entries of the epoch's list (positions j * R + r for j < k), all of them
// real entries of the order (the padding sits past them while the epoch has more to give). A job of R' ranks
// continues that epoch with resume_epoch_at(epoch, k * R): the remaining entries order[k * R :] are split among
// its R' ranks the same way (padded by repeating their head, or truncated with drop_last); later epochs are
// ordinary epochs of R' ranks. global_position() gives the position a checkpoint saves.
class DistributedSampler : public Sampler {
 public:
  // ValueError naming the value and the valid range unless num_replicas >= 1, 0 <= rank < num_replicas and
  // dataset_size >= 0.
  DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);
  int64_t size() const override { return samples_per_rank(epoch_start()); }
  // Indices per rank in epoch `epoch` (size() is the current epoch's).
  int64_t size_of_epoch(int64_t epoch) const { return samples_per_rank(start_of_epoch(epoch)); }
  int64_t total_size() const { return size() * num_replicas_; }
  std::vector<int64_t> indices() const override;
  void set_epoch(int64_t epoch) override { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }
  int64_t dataset_size() const { return dataset_size_; }
  bool drop_last() const { return drop_last_; }

  // Continues epoch `epoch` from position `start` of its order (0 <= start <= dataset_size): the first `start`
  // entries were consumed before (by all ranks of an earlier job together, whatever its world size). For that
  // epoch the ranks share order[start :] as above; size() and indices() follow while epoch() == epoch. Also
  // selects the epoch (set_epoch(epoch)). One resumed epoch at a time; start 0 is an ordinary epoch.
  // ValueError naming the value and the range otherwise.
  void resume_epoch_at(int64_t epoch, int64_t start);
  // Where epoch `epoch` begins in its order: resume_epoch_at's start for the resumed epoch, else 0.
  int64_t start_of_epoch(int64_t epoch) const { return epoch == resumed_epoch_ ? resumed_start_ : 0; }
  int64_t epoch_start() const { return start_of_epoch(epoch_); }
  // The position in epoch `epoch`'s order once every rank took its first `taken` indices of it (0 <= taken <=
  // its indices per rank): start_of_epoch(epoch) + taken * num_replicas, at most dataset_size (padding is not a
  // position).
  int64_t global_position(int64_t epoch, int64_t taken) const;
  // What every rank's sampler must share, by name: dataset_size, num_replicas, shuffle, seed, drop_last, epoch,
  // epoch_start.
  // Ranks whose samplers differ in any of these read overlapping shards or leave samples out; under a process
  // group, distributed::check_sampler_agrees (distributed/consistency.h) compares them across the ranks.
  std::vector<std::pair<std::string, std::string>> settings() const;

 private:
  int64_t dataset_size_;
  int64_t num_replicas_;
  int64_t rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t epoch_ = 0;
  int64_t resumed_epoch_ = -1;
  int64_t resumed_start_ = 0;

  // Indices per rank when the epoch's list starts at `start` of the order.
  int64_t samples_per_rank(int64_t start) const;
};

}  // namespace syncgrad::data
