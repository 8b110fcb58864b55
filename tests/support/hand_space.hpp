#pragma once
// Hand-made decision problems: a design space with one knob setting (100 MHz GPU) and the same power
// at every batch size, so that the time to the target orders the batch sizes as (time per sample) x
// (samples to the target), and the adaptive engine's problem on it. Shared by the adaptive engine's
// tests (explore/) and the benchmarks that compare choices on hand-made relations (experiments/bench/).
#include <vector>

#include "explore/adaptive.hpp"
#include "explore/space.hpp"
#include "traces/records.hpp"

namespace pacer::testing {

// Batch size batch_sizes[i] takes time_per_sample_s[i] per sample (its time per batch is that x b).
inline explore::Space one_knob_space(const std::vector<int>& batch_sizes, const std::vector<double>& time_per_sample_s,
                                     double power_w = 5) {
  explore::Space::Arrays a;
  a.knob = traces::KnobSpace::gpu_frequency();
  a.knob_settings = {{100e6}};
  a.batch_sizes = batch_sizes;
  for (size_t i = 0; i < batch_sizes.size(); ++i) {
    a.time_per_batch_s.push_back(time_per_sample_s.at(i) * batch_sizes[i]);
    a.power_w.push_back(power_w);
  }
  return explore::Space::from_arrays(a);
}

// The adaptive engine's problem on `index`: one cap of 10 W (above every point's power), a relation
// "hand" of accuracy (higher is better) to `target`.
inline explore::AdaptiveProblem one_cap_problem(const explore::Index& index, double target) {
  explore::AdaptiveProblem p;
  p.index = &index;
  p.caps_w = {10};
  p.relation.name = "hand";
  p.relation.metric = "accuracy";
  p.relation.higher_is_better = true;
  p.relation.target = target;
  return p;
}

}  // namespace pacer::testing
