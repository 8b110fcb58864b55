#pragma once
// Choosing what to profile: the k most informative configurations for a budget of k, so a user
// profiles 6-10 points instead of the whole grid. Start from the corners of the (knob, b) box,
// then add greedily the candidate that most increases log det of the information matrix of the
// analytical time and power models (D-optimal design; for other knobs, of a quadratic surface in
// (knob, log b)), and finish with exchange passes that swap a chosen point for a better one. For the
// GPU clock the matrix also holds potential terms (u^2, u^3, l^2, l^3, u*l of the normalised clock u
// and log batch size l) with a prior (Bayesian D-optimality), so the design spreads over f and b
// instead of repeating the extremes: the model's form is checked where it could be wrong.
#include <string>
#include <vector>

#include "traces/records.hpp"

namespace pacer::models {

struct PlanPoint {
  std::vector<double> knob;
  int batch_size = 0;
  bool operator==(const PlanPoint&) const = default;
};

struct PlannerOptions {
  int k = 8;
  traces::KnobSpace knob = traces::KnobSpace::gpu_frequency();
  // V(f) for the gpu_freq design (catalog table); empty: a floored line with a knee at mid-range.
  std::vector<traces::VoltagePoint> voltage_table;
  int exchange_passes = 2;
  // gpu_freq design: prior standard deviation of the "potential" terms (curvature in f and log b the
  // model may lack; Bayesian D-optimality, DuMouchel and Jones 1994), in units of the response
  // range. 1 is their published default (not tuned to any board); 0 gives the plain D-optimal
  // design, which piles the points on the extremes of f.
  double potential_tau = 1.0;
};

// Every (setting, b) of a grid, in setting-major order.
std::vector<PlanPoint> grid_points(const std::vector<std::vector<double>>& settings, const std::vector<int>& batch_sizes);

// min(k, candidates) distinct candidates, in the order chosen. Deterministic. Throws Error when
// k < 1 or when there are no candidates.
std::vector<PlanPoint> plan_points(const std::vector<PlanPoint>& candidates, const PlannerOptions& options);

}  // namespace pacer::models
