// Data-parallel training with your own loop: DistributedDataParallel + DistributedSampler + DataLoader on
// Fashion-MNIST. Start it with the launcher (each process trains on its shard; gradients are averaged):
//   build/tools/syncgrad-launch --nproc-per-node 2 build/examples/ddp-train-example [steps]
// Run without the launcher it trains alone (world size 1). Rank 0 prints the loss and saves the weights.
#include <cstdlib>
#include <iostream>

#include "syncgrad.h"

using namespace syncgrad;
namespace dist = syncgrad::distributed;

int main(int argc, char** argv) {
  const int64_t max_steps = argc > 1 ? std::atoll(argv[1]) : 200;
  try {
    auto group = dist::init_process_group({.backend = "gloo"});
    auto dataset = std::make_shared<data::MnistDataset>(data::default_fashion_mnist_dir(), /*train=*/true);
    auto model = models::make_model("mlp");
    dist::DistributedDataParallel ddp(model, group, {.bucket_cap_mb = 25});  // copies rank 0's weights to all
    optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});

    auto sampler = std::make_shared<data::DistributedSampler>(dataset->size(), group->size(), group->rank());
    data::DataLoader loader(dataset, {.batch_size = 64, .sampler = sampler, .num_workers = 1});
    int64_t step = 0;
    for (int epoch = 0; step < max_steps; ++epoch) {
      sampler->set_epoch(epoch);  // a new shuffle each epoch, the same on every rank
      for (data::Batch& batch : loader) {
        opt.zero_grad();
        Tensor loss = cross_entropy(ddp(batch.data), batch.target);
        loss.backward();  // gradients are averaged across the processes here
        opt.step();
        if (++step % 50 == 0 && group->rank() == 0) {
          std::cout << "step " << step << " loss " << loss.item<double>() << "\n";
        }
        if (step == max_steps) break;
      }
    }
    if (group->rank() == 0) io::save_safetensors("ddp_mlp.safetensors", model->state_dict());  // no "module."
    dist::destroy_process_group();
  } catch (const Error& e) {
    std::cerr << "ddp-train-example: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
