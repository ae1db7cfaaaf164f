// Saving and restoring a user's training loop (see training_state.h).
#include "distributed/training_state.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "data/data_position.h"
#include "distributed/comm_state_io.h"
#include "distributed/elastic.h"
#include "distributed/host_values.h"
#include "distributed/init.h"
#include "distributed/rank0_work.h"
#include "optim/optimizer_state_io.h"
#include "tensor/check.h"
#include "tensor/generator.h"
#include "tensor/io/checkpoint_directory.h"
#include "tensor/io/directory_lock.h"
#include "tensor/io/safetensors.h"

namespace syncgrad::distributed {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "syncgrad-training-state/1";
constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kStateFile = "training_state.safetensors";
constexpr const char* kCommStateFile = "comm_state.safetensors";
const std::string kGradScalerPrefix = "grad_scaler.";
const std::string kSchedulerPrefix = "lr_scheduler.";

using Metadata = std::map<std::string, std::string>;

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

void put_prefixed(Metadata& metadata, const std::string& prefix, const std::map<std::string, double>& values) {
  for (const auto& [key, value] : values) metadata.emplace(prefix + key, number_text(value));
}

const std::string& field(const Metadata& metadata, const std::string& key, const std::string& file) {
  const auto it = metadata.find(key);
  SYNCGRAD_CHECK(it != metadata.end(), ValueError, "checkpoint ", file, ": metadata field \"", key,
                 "\" is missing; the file was not written by distributed::TrainingState");
  return it->second;
}

int64_t integer_field(const Metadata& metadata, const std::string& key, const std::string& file) {
  const std::string& text = field(metadata, key, file);
  try {
    return std::stoll(text);
  } catch (const std::logic_error&) {
    throw ValueError("checkpoint " + file + ": metadata field \"" + key + "\" is \"" + text + "\", not a number");
  }
}

// The "<prefix><key>" fields as numbers; ValueError naming the file when there are none.
std::map<std::string, double> prefixed(const Metadata& metadata, const std::string& prefix, const std::string& file,
                                       const char* what) {
  std::map<std::string, double> values;
  for (const auto& [key, text] : metadata) {
    if (key.rfind(prefix, 0) != 0) continue;
    try {
      values[key.substr(prefix.size())] = std::stod(text);
    } catch (const std::logic_error&) {
      throw ValueError("checkpoint " + file + ": metadata field \"" + key + "\" is \"" + text + "\", not a number");
    }
  }
  SYNCGRAD_CHECK(!values.empty(), ValueError, "checkpoint ", file, " holds no ", what, " state (\"", prefix,
                 "*\" fields) but one is tracked; restore it from a checkpoint saved with it tracked");
  return values;
}

// The checkpoint `path` leads to, or none for a fresh start.
std::optional<std::string> checkpoint_of(const std::string& path, std::ostream& warnings) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    SYNCGRAD_CHECK(!fs::exists(path, ec), ValueError, "TrainingState::restore: ", path,
                   " is not a directory; pass the checkpoint root or one of its step-NNNNNN directories");
    return std::nullopt;
  }
  const std::string name = fs::path(path).lexically_normal().filename().string();
  if (io::step_of_directory_name(name) || fs::exists(fs::path(path) / io::kManifestFileName, ec)) {
    io::verify_checkpoint(path);
    return path;
  }
  if (io::list_checkpoints(path).empty()) return std::nullopt;
  std::vector<std::string> skipped;
  const std::optional<std::string> newest = io::newest_complete_checkpoint(path, &skipped);
  std::string reasons;
  for (const std::string& reason : skipped) reasons += "\n  " + reason;
  if (!newest) {
    throw io::CorruptCheckpointError("checkpoint directory " + path + ": none of its checkpoints is complete:" +
                                     reasons);
  }
  for (const std::string& reason : skipped) warnings << "warning: skipping checkpoint: " << reason << "\n";
  return newest;
}

}  // namespace

struct TrainingState::Tracked {
  nn::Module* model = nullptr;
  optim::Optimizer* optimizer = nullptr;
  optim::LRScheduler* scheduler = nullptr;
  optim::GradScaler* scaler = nullptr;
  data::DataLoader* loader = nullptr;
  DistributedDataParallel* ddp = nullptr;
  bool elastic = false;
  std::optional<io::DirectoryLock> lock;  // rank 0, of the root saved to
  std::string locked_root;
};

TrainingState::TrainingState(std::shared_ptr<ProcessGroup> group)
    : group_(std::move(group)), tracked_(std::make_unique<Tracked>()) {
  tracked_->elastic = elastic_requested_by_environment();
}

TrainingState::~TrainingState() = default;

namespace {
template <typename T>
void set_once(T*& slot, T& object, const char* what) {
  SYNCGRAD_CHECK(slot == nullptr || slot == &object, ValueError, "TrainingState::track: a ", what,
                 " is already tracked; a TrainingState saves one of each");
  slot = &object;
}
}  // namespace

TrainingState& TrainingState::track(nn::Module& model) { set_once(tracked_->model, model, "model"); return *this; }
TrainingState& TrainingState::track(optim::Optimizer& optimizer) {
  set_once(tracked_->optimizer, optimizer, "optimizer");
  return *this;
}
TrainingState& TrainingState::track(optim::LRScheduler& scheduler) {
  set_once(tracked_->scheduler, scheduler, "LR scheduler");
  return *this;
}
TrainingState& TrainingState::track(optim::GradScaler& scaler) {
  set_once(tracked_->scaler, scaler, "GradScaler");
  return *this;
}
TrainingState& TrainingState::track(data::DataLoader& loader) {
  set_once(tracked_->loader, loader, "DataLoader");
  return *this;
}
TrainingState& TrainingState::track(DistributedDataParallel& ddp) {
  set_once(tracked_->ddp, ddp, "DistributedDataParallel");
  return track(*ddp.module());
}
TrainingState& TrainingState::allow_world_size_change(bool allow) {
  tracked_->elastic = allow;
  return *this;
}

std::string TrainingState::save(const std::string& root, int keep) {
  const Tracked& t = *tracked_;
  SYNCGRAD_CHECK(t.model != nullptr, ValueError, "TrainingState::save(", root,
                 "): no model is tracked; call track(model) first");
  SYNCGRAD_CHECK(keep >= 0, ValueError, "TrainingState::save: keep ", keep, " must be >= 0 (0: keep all)");
  const int rank = group_ ? group_->rank() : 0;
  const int world = group_ ? group_->size() : 1;
  std::string dir;
  // Collective: every rank's comm state (PowerSGD's error feedback is per rank) goes into rank 0's checkpoint.
  const CommState comm_state = t.ddp ? gather_comm_state(*t.ddp) : CommState{};
  const auto write = [&] {
    if (!tracked_->lock || tracked_->locked_root != root) {
      std::error_code ec;
      fs::create_directories(root, ec);
      SYNCGRAD_CHECK(!ec, IOError, "TrainingState::save: cannot create \"", root, "\": ", ec.message());
      tracked_->lock.reset();
      tracked_->lock.emplace(root, "TrainingState checkpoint directory");
      tracked_->locked_root = root;
    }
    Metadata metadata = {{"format", kFormat},
                         {"step", std::to_string(step)},
                         {"world_size", std::to_string(world)},
                         {"rng_seed", std::to_string(default_generator().seed())},
                         {"rng_offset", std::to_string(default_generator().offset())}};
    io::NamedTensors tensors;
    if (t.optimizer) {
      const optim::OptimizerStateDict state = t.optimizer->state_dict();
      tensors = optim::optimizer_tensors(state);
      metadata.emplace(optim::kOptimizerGroupsField, optim::optimizer_groups_json(state));
    }
    if (t.loader) {
      const data::DataPosition position = data::data_position(*t.loader, world);
      const int64_t global_batch = t.loader->options().batch_size * world;
      metadata.emplace("epoch", std::to_string(position.epoch));
      metadata.emplace("batches_consumed", std::to_string(position.batches_consumed));
      metadata.emplace("global_batch_size", std::to_string(global_batch));
      metadata.emplace("epoch_start", std::to_string(position.epoch_start));
      metadata.emplace("samples_consumed", std::to_string(position.global_position));
    }
    if (t.scheduler) put_prefixed(metadata, kSchedulerPrefix, t.scheduler->state_dict());
    if (t.scaler) put_prefixed(metadata, kGradScalerPrefix, t.scaler->state_dict());
    io::CheckpointWriter writer(*tracked_->lock, step);
    io::save_safetensors(writer.path_of(kModelFile), t.model->state_dict(),
                         {{"format", "pt"}, {"step", std::to_string(step)}});
    io::save_safetensors(writer.path_of(kStateFile), tensors, metadata);
    if (t.ddp) {
      io::save_safetensors(writer.path_of(kCommStateFile), comm_state,
                           {{"step", std::to_string(step)}, {"world_size", std::to_string(world)}});
    }
    dir = writer.commit();
    if (keep > 0) io::prune_checkpoints(*tracked_->lock, keep);
  };
  if (world == 1) {
    write();
  } else if (is_initialized() && default_group_ptr() == group_) {
    // The others wait on rank 0's heartbeat, not at a barrier bounded by the collective timeout: a slow save
    // is not a hang.
    run_on_rank0(*group_, *default_store(), "saving the checkpoint", write);
  } else {
    if (rank == 0) write();
    group_->barrier()->wait();
  }
  return dir;
}

bool TrainingState::restore(const std::string& path, std::ostream& warnings) {
  const Tracked& t = *tracked_;
  SYNCGRAD_CHECK(t.model != nullptr, ValueError, "TrainingState::restore(", path,
                 "): no model is tracked; call track(model) first");
  const std::optional<std::string> dir = checkpoint_of(path, warnings);
  // Every rank continues from the same step (or every rank starts afresh).
  const int64_t found = dir ? integer_field(io::load_safetensors((fs::path(*dir) / kStateFile).string()).metadata,
                                            "step", *dir) : -1;
  if (group_ && group_->size() > 1) {
    const auto steps = PendingValues::allgather(*group_, {found}).wait();
    for (size_t rank = 1; rank < steps.size(); ++rank) {
      SYNCGRAD_CHECK(steps[rank][0] == steps[0][0], ValueError, "TrainingState::restore(", path, "): rank ", rank,
                     " found step ", steps[rank][0], " but rank 0 step ", steps[0][0],
                     " (-1: none); every rank must read the same checkpoint directory");
    }
  }
  if (!dir) return false;
  const std::string state_file = (fs::path(*dir) / kStateFile).string();
  const std::string model_file = (fs::path(*dir) / kModelFile).string();
  io::SafetensorsContents state = io::load_safetensors(state_file);
  const Metadata& meta = state.metadata;
  SYNCGRAD_CHECK(field(meta, "format", state_file) == kFormat, ValueError, "checkpoint ", state_file, ": format \"",
                 meta.at("format"), "\" is not ", kFormat, " (syncgrad-train's checkpoints load with --resume)");
  const int world = group_ ? group_->size() : 1;
  const int64_t saved_world = integer_field(meta, "world_size", state_file);
  check_world_size_change(saved_world, world, t.elastic, "checkpoint " + state_file,
                          "call TrainingState::allow_world_size_change(true) (or set SYNCGRAD_ELASTIC=1)");
  io::SafetensorsContents weights = io::load_safetensors(model_file);
  io::check_state_matches(t.model->state_dict(), weights.tensors, model_file);
  const std::string comm_file = (fs::path(*dir) / kCommStateFile).string();
  CommState comm_state;
  if (t.ddp) {
    SYNCGRAD_CHECK(fs::exists(comm_file), ValueError, "checkpoint ", *dir, " has no ", kCommStateFile,
                   " but a DistributedDataParallel is tracked; restore it from a checkpoint saved with it tracked");
    comm_state = io::load_safetensors(comm_file).tensors;
  }
  if (t.loader && saved_world != world) {
    const auto* sampler = dynamic_cast<const data::DistributedSampler*>(t.loader->options().sampler.get());
    SYNCGRAD_CHECK(sampler != nullptr, ValueError, "checkpoint ", state_file, " was saved by a job of world size ",
                   saved_world, "; continuing it at world size ", world, " needs the tracked DataLoader to read "
                   "through a DistributedSampler (it splits the epoch's remaining samples among the ranks)");
  }
  if (t.loader && saved_world == world) {
    const int64_t global_batch = t.loader->options().batch_size * world;
    const int64_t saved_batch = integer_field(meta, "global_batch_size", state_file);
    SYNCGRAD_CHECK(saved_batch == global_batch, ValueError, "checkpoint ", state_file, " was saved with a global "
                   "batch size of ", saved_batch, " but this job's is ", global_batch,
                   " (batch_size x world size); use the same batch size to continue exactly");
  }
  optim::OptimizerStateDict optimizer_state;
  if (t.optimizer) {
    optimizer_state = optim::optimizer_state_from(state.tensors, field(meta, optim::kOptimizerGroupsField, state_file),
                                                  state_file);
  }
  const auto scheduler_state =
      t.scheduler ? prefixed(meta, kSchedulerPrefix, state_file, "LR scheduler") : std::map<std::string, double>{};
  const auto scaler_state =
      t.scaler && t.scaler->is_enabled() ? prefixed(meta, kGradScalerPrefix, state_file, "GradScaler")
                                         : std::map<std::string, double>{};  // a disabled one has no state
  const uint64_t rng_seed = static_cast<uint64_t>(integer_field(meta, "rng_seed", state_file));
  const uint64_t rng_offset = static_cast<uint64_t>(integer_field(meta, "rng_offset", state_file));
  // Everything is read and checked: now change the objects.
  t.model->load_state_dict(weights.tensors, true);
  if (t.optimizer) t.optimizer->load_state_dict(optimizer_state);
  if (t.scheduler) t.scheduler->load_state_dict(scheduler_state);
  if (t.scaler && t.scaler->is_enabled()) t.scaler->load_state_dict(scaler_state);
  if (t.loader) {
    const auto optional_field = [&](const char* key) {
      return meta.count(key) ? integer_field(meta, key, state_file) : int64_t{0};  // absent before elastic resume
    };
    data::restore_data_position(*t.loader,
                                {.epoch = integer_field(meta, "epoch", state_file),
                                 .batches_consumed = integer_field(meta, "batches_consumed", state_file),
                                 .epoch_start = optional_field("epoch_start"),
                                 .global_position = optional_field("samples_consumed"),
                                 .world_size = saved_world},
                                world);
  }
  if (t.ddp) restore_comm_state(*t.ddp, comm_state, saved_world, comm_file, warnings);
  default_generator().set_state(rng_seed, rng_offset);
  step = found;
  return true;
}

}  // namespace syncgrad::distributed
