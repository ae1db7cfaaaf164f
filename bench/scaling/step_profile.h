// StepProfile: one worker's training step as measured on this machine -- the scaling model's input. Times are
// medians over the measured steps, in seconds.
#pragma once

#include <cstdint>
#include <vector>

namespace syncgrad::bench {

// One parameter's gradient, in the order backward produced them.
struct GradientReady {
  double ready_seconds = 0;  // from the start of backward until the gradient was final
  int64_t numel = 0;
  double bytes = 0;
};

struct StepProfile {
  int64_t batch_per_worker = 0;
  double data_seconds = 0;               // the DataLoader producing one worker's batch
  double forward_seconds = 0;            // the model's forward on one worker's batch
  double loss_seconds = 0;               // the loss of one worker's batch
  double backward_seconds = 0;           // backward without DDP
  double ddp_backward_seconds = 0;       // backward under DDP with one worker (adds the copies into buckets and back,
                                         // and a communication hook's launch() calls: its encoding)
  double hook_finish_seconds = 0;        // a communication hook's finish() calls with one worker (its decoding)
  double optimizer_seconds = 0;          // zero_grad + step
  std::vector<GradientReady> gradients;  // under DDP with one worker
  std::vector<double> buffer_bytes;  // each buffer DDP broadcasts from rank 0 before every forward
  double parameter_bytes = 0;
  double input_bytes = 0;   // one worker's batch
  double output_bytes = 0;  // one worker's model output
  // This machine's DataParallel, whose replicas share memory: the serial work on the caller's thread.
  double replica_copy_seconds = 0;    // copying every parameter into one replica
  double gradient_clone_seconds = 0;  // cloning one replica's gradients (the first term of the sum)
  double gradient_add_seconds = 0;    // adding one replica's gradients to the sum
  double output_copy_seconds = 0;     // copying one worker's output (gather) or its gradient (scatter)
  double wake_seconds = 0;            // handing one parallel region to one worker thread and waiting for it

  // The compute of one DDP step with one worker: data + forward + loss + DDP's backward + the hook's decoding
  // + optimizer.
  double ddp_compute_seconds() const;
  // Sum of the gradients' bytes.
  double gradient_bytes() const;
  // Time of the last gradient (0 without gradients).
  double last_ready_seconds() const;
};

}  // namespace syncgrad::bench
