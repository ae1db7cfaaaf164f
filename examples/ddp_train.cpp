// Data-parallel training with your own loop: DistributedDataParallel + DistributedSampler + DataLoader on
// Fashion-MNIST. Start it with the launcher (each process trains on its shard; gradients are averaged):
//   build/tools/syncgrad-launch --nproc-per-node 2 build/examples/ddp-train-example [steps] [checkpoint-dir]
// Run without the launcher it trains alone (world size 1). Rank 0 prints the loss and saves the weights.
// With a checkpoint directory it continues from the newest checkpoint there, saves one every 50 steps, and on
// SIGTERM or SIGUSR1 (to any rank) saves the step every rank has finished and exits with status 75.
#include <cstdlib>
#include <iostream>
#include <string>

#include "syncgrad.h"

using namespace syncgrad;
namespace dist = syncgrad::distributed;

int main(int argc, char** argv) {
  const int64_t max_steps = argc > 1 ? std::atoll(argv[1]) : 200;
  const std::string checkpoint_dir = argc > 2 ? argv[2] : "";
  try {
    auto group = dist::init_process_group({.backend = "gloo"});
    auto dataset = std::make_shared<data::MnistDataset>(data::default_fashion_mnist_dir(), /*train=*/true);
    auto model = models::make_model("mlp");
    dist::DistributedDataParallel ddp(model, group, {.bucket_cap_mb = 25});  // copies rank 0's weights to all
    optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});

    auto sampler = std::make_shared<data::DistributedSampler>(dataset->size(), group->size(), group->rank());
    data::DataLoader loader(dataset, {.batch_size = 64, .sampler = sampler, .num_workers = 1});
    dist::TrainingState state(group);  // model, optimizer, data position, step, random state
    state.track(*model).track(opt).track(loader);
    if (!checkpoint_dir.empty() && state.restore(checkpoint_dir) && group->rank() == 0) {
      std::cout << "resumed at step " << state.step << "\n";
    }
    dist::PreemptionWatch watch;
    bool preempted = false;
    for (int64_t epoch = loader.state().epoch; state.step < max_steps && !preempted; ++epoch) {
      sampler->set_epoch(epoch);  // a new shuffle each epoch, the same on every rank
      for (data::Batch& batch : loader) {
        opt.zero_grad();
        Tensor loss = cross_entropy(ddp(batch.data), batch.target);
        loss.backward();  // gradients are averaged across the processes here
        opt.step();
        if (++state.step % 50 == 0 && group->rank() == 0) {
          std::cout << "step " << state.step << " loss " << loss.item<double>() << "\n";
        }
        preempted = watch.should_stop(group.get());  // agreed by all ranks
        if (!checkpoint_dir.empty() && (preempted || state.step % 50 == 0)) state.save(checkpoint_dir);
        if (preempted || state.step == max_steps) break;
      }
    }
    if (group->rank() == 0) io::save_safetensors("ddp_mlp.safetensors", model->state_dict());  // no "module."
    dist::destroy_process_group();
    if (preempted) return dist::kPreemptedExitStatus;
  } catch (const Error& e) {
    std::cerr << "ddp-train-example: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
