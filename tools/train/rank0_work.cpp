// Rank 0's solo work in a run (see rank0_work.h).
#include "tools/train/rank0_work.h"

#include "distributed/init.h"
#include "distributed/rank0_work.h"
#include "tools/train/training_run.h"

namespace syncgrad::train {

void on_rank0_while_others_wait(const TrainingRun& run, const std::string& what, const std::function<void()>& work) {
  if (!run.job.group()) return work();
  distributed::run_on_rank0(*run.job.group(), *distributed::default_store(), what, work);
}

}  // namespace syncgrad::train
