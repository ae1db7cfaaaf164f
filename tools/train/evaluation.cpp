// Sharded held-out evaluation (see evaluation.h).
#include "tools/train/evaluation.h"

#include "syncgrad.h"
#include "tools/train/training_run.h"

namespace syncgrad::train {

Evaluation evaluate(const Task& task, nn::Module& model, distributed::ProcessGroup* group) {
  const int rank = group ? group->rank() : 0;
  const int world = group ? group->size() : 1;
  const int64_t batches = task.evaluation_batches();
  std::vector<int64_t> mine;
  for (int64_t b = rank; b < batches; b += world) mine.push_back(b);
  std::vector<EvaluationTally> my_tallies;
  {
    NoGradGuard no_grad;
    model.eval();
    my_tallies = task.evaluate_batches(model, mine);
    model.train();
  }
  // Every batch's tally, (batches, 2) f64: this rank's batches filled, the others' zero until reduced (adding
  // zeros is exact, so the sums below are the single-process sums).
  Tensor tallies = zeros({batches, 2}, {.dtype = DType::f64});
  double* slot = tallies.data_ptr<double>();
  for (size_t i = 0; i < mine.size(); ++i) {
    slot[2 * mine[i]] = my_tallies[i].sum;
    slot[2 * mine[i] + 1] = static_cast<double>(my_tallies[i].examples);
  }
  if (group && world > 1 && batches > 0) {
    Tensor shared = tallies.to(group->tensor_device());
    group->allreduce(shared, distributed::ReduceOp::kSum)->wait();
    tallies = shared.to(kCPU);
    slot = tallies.data_ptr<double>();
  }
  EvaluationTally total;
  for (int64_t b = 0; b < batches; ++b) {
    total.sum += slot[2 * b];
    total.examples += static_cast<int64_t>(slot[2 * b + 1]);
  }
  return task.summarize(total);
}

Evaluation evaluate(TrainingRun& run) {
  profiler::Scope span("train", "evaluation");
  span.arg("step", run.position.step);
  if (run.ddp) run.ddp->broadcast_buffers();
  return evaluate(*run.task, *run.model, run.job.group().get());
}

}  // namespace syncgrad::train
