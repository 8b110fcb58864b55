#include "models/planner.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "models/analytical.hpp"

namespace pacer::models {

std::vector<PlanPoint> grid_points(const std::vector<std::vector<double>>& settings,
                                   const std::vector<int>& batch_sizes) {
  std::vector<PlanPoint> out;
  for (const auto& s : settings)
    for (int b : batch_sizes) out.push_back({s, b});
  return out;
}

namespace {

// Feature blocks whose information matrices the design maximises (one block per fitted target).
struct Design {
  std::vector<std::vector<Eigen::VectorXd>> blocks;  // blocks[block][candidate]
  std::vector<Eigen::VectorXd> prior;                // per block: prior precision of each column
};

// Bayesian D-optimality (DuMouchel and Jones, Technometrics 1994): each block gets "potential"
// terms -- what the model might be missing -- whose coefficients have prior variance tau^2, so the
// design keeps the primary parameters determined while also checking for lack of fit. Potential
// terms are made orthogonal to the primary ones over the candidates and scaled to a range of 1.
void add_potential_terms(Design& d, const std::vector<Eigen::VectorXd>& potential, double tau) {
  const Eigen::Index q = potential.front().size();
  const auto n = static_cast<Eigen::Index>(potential.size());
  for (size_t bi = 0; bi < d.blocks.size(); ++bi) {
    auto& block = d.blocks[bi];
    const Eigen::Index p = block.front().size();
    Eigen::MatrixXd x(n, p), z(n, q);
    for (Eigen::Index i = 0; i < n; ++i) {
      x.row(i) = block[static_cast<size_t>(i)].transpose();
      z.row(i) = potential[static_cast<size_t>(i)].transpose();
    }
    const Eigen::MatrixXd r = z - x * x.completeOrthogonalDecomposition().solve(z);
    Eigen::MatrixXd rs = r;
    for (Eigen::Index j = 0; j < q; ++j) {
      const double range = r.col(j).maxCoeff() - r.col(j).minCoeff();
      rs.col(j) = range > 1e-12 ? Eigen::VectorXd(r.col(j) / range) : Eigen::VectorXd::Zero(n);
    }
    for (Eigen::Index i = 0; i < n; ++i) {
      Eigen::VectorXd v(p + q);
      v << block[static_cast<size_t>(i)], rs.row(i).transpose();
      block[static_cast<size_t>(i)] = v;
    }
    Eigen::VectorXd k = Eigen::VectorXd::Constant(p + q, 1e-6);
    k.tail(q).setConstant(1.0 / (tau * tau));
    d.prior[bi] = k;
  }
}

Design gpu_freq_design(const std::vector<PlanPoint>& cands, const PlannerOptions& options) {
  double f_max = 0, b_min = std::numeric_limits<double>::infinity(), b_max = 0;
  double f_min = std::numeric_limits<double>::infinity();
  for (const auto& c : cands) {
    f_max = std::max(f_max, c.knob.at(0));
    f_min = std::min(f_min, c.knob.at(0));
    b_min = std::min(b_min, static_cast<double>(c.batch_size));
    b_max = std::max(b_max, static_cast<double>(c.batch_size));
  }
  VoltageCurve v;
  if (!options.voltage_table.empty()) {
    v.table = options.voltage_table;
    std::sort(v.table.begin(), v.table.end(),
              [](const traces::VoltagePoint& a, const traces::VoltagePoint& b) { return a.freq_hz < b.freq_hz; });
  } else {
    // A typical DVFS shape: flat to mid-range, then ~30% higher at the top.
    v.knee_hz = 0.5 * (f_min + f_max);
    v.slope_v_per_hz = f_max > v.knee_hz ? 0.3 / (f_max - v.knee_hz) : 0;
  }
  const double v_top = v.at(f_max);
  const double half = std::sqrt(b_min * b_max) / b_max;
  Design d;
  d.blocks.resize(2);
  d.prior.resize(2);
  std::vector<Eigen::VectorXd> potential;
  for (const auto& c : cands) {
    const double f = c.knob.at(0) / f_max;
    const double b = c.batch_size / b_max;
    const double volt = v.at(c.knob.at(0)) / v_top;
    Eigen::VectorXd t(4);
    t << 1.0, b, 1.0 / f, b / f;
    const double dyn = f * volt * volt;
    Eigen::VectorXd p(5);
    p << 1.0, volt, dyn, dyn * b / (b + half), -dyn * b * half / ((b + half) * (b + half));
    d.blocks[0].push_back(t);
    d.blocks[1].push_back(p);
    const double u = f_max > f_min ? (c.knob.at(0) - f_min) / (f_max - f_min) : 0;
    const double l = b_max > b_min ? std::log(c.batch_size / b_min) / std::log(b_max / b_min) : 0;
    Eigen::VectorXd z(5);
    z << u * u, u * u * u, l * l, u * l, l * l * l;
    potential.push_back(z);
  }
  for (size_t bi = 0; bi < 2; ++bi) d.prior[bi] = Eigen::VectorXd::Constant(d.blocks[bi].front().size(), 1e-6);
  if (options.potential_tau > 0) add_potential_terms(d, potential, options.potential_tau);
  return d;
}

Design generic_design(const std::vector<PlanPoint>& cands) {
  const size_t dims = cands.front().knob.size();
  std::vector<double> k_max(dims, 0.0);
  double lb_max = 0;
  for (const auto& c : cands) {
    for (size_t j = 0; j < dims; ++j) k_max[j] = std::max(k_max[j], std::abs(c.knob.at(j)));
    lb_max = std::max(lb_max, std::log2(static_cast<double>(c.batch_size)));
  }
  Design d;
  d.blocks.resize(1);
  d.prior.resize(1);
  for (const auto& c : cands) {
    const double lb = lb_max > 0 ? std::log2(static_cast<double>(c.batch_size)) / lb_max : 0;
    std::vector<double> f{1.0, lb, lb * lb};
    for (size_t j = 0; j < dims; ++j) {
      const double x = k_max[j] > 0 ? c.knob.at(j) / k_max[j] : 0;
      f.push_back(x);
      f.push_back(x * x);
      f.push_back(x * lb);
    }
    d.blocks[0].push_back(Eigen::Map<Eigen::VectorXd>(f.data(), static_cast<Eigen::Index>(f.size())));
  }
  d.prior[0] = Eigen::VectorXd::Constant(d.blocks[0].front().size(), 1e-6);
  return d;
}

double criterion(const Design& d, const std::vector<size_t>& chosen) {
  double total = 0;
  for (size_t bi = 0; bi < d.blocks.size(); ++bi) {
    const auto& block = d.blocks[bi];
    // The small ridge keeps log det finite while fewer points than parameters are chosen, so the
    // greedy step still prefers points that open new directions.
    Eigen::MatrixXd m = d.prior[bi].asDiagonal();
    for (size_t i : chosen) m.noalias() += block[i] * block[i].transpose();
    total += Eigen::LDLT<Eigen::MatrixXd>(m).vectorD().array().log().sum();
  }
  return total;
}

double scalar_knob(const PlanPoint& p, const std::vector<double>& k_min, const std::vector<double>& k_max) {
  double s = 0;
  for (size_t j = 0; j < p.knob.size(); ++j)
    s += k_max[j] > k_min[j] ? (p.knob[j] - k_min[j]) / (k_max[j] - k_min[j]) : 0;
  return p.knob.empty() ? 0 : s / static_cast<double>(p.knob.size());
}

}  // namespace

std::vector<PlanPoint> plan_points(const std::vector<PlanPoint>& candidates_in, const PlannerOptions& options) {
  if (options.k < 1) throw Error(fmt::format("the planner needs a budget of at least 1 point, got {}", options.k));
  if (candidates_in.empty()) throw Error("the planner has no candidate configurations to choose from");
  // Distinct candidates only, in their given order.
  std::vector<PlanPoint> cands;
  for (const auto& c : candidates_in)
    if (std::find(cands.begin(), cands.end(), c) == cands.end()) cands.push_back(c);
  const size_t dims = cands.front().knob.size();
  for (const auto& c : cands)
    if (c.knob.size() != dims || c.batch_size < 1)
      throw Error("the planner's candidates must share one knob dimension and have batch sizes >= 1");
  const size_t k = std::min(static_cast<size_t>(options.k), cands.size());

  std::vector<double> k_min(dims, std::numeric_limits<double>::infinity()), k_max(dims, -k_min[0]);
  double lb_min = std::numeric_limits<double>::infinity(), lb_max = -lb_min;
  for (const auto& c : cands) {
    for (size_t j = 0; j < dims; ++j) {
      k_min[j] = std::min(k_min[j], c.knob[j]);
      k_max[j] = std::max(k_max[j], c.knob[j]);
    }
    lb_min = std::min(lb_min, std::log2(static_cast<double>(c.batch_size)));
    lb_max = std::max(lb_max, std::log2(static_cast<double>(c.batch_size)));
  }
  // Corners of the (knob, log b) box, most useful first: the fastest corner, the slowest one,
  // then the two mixed ones.
  const double corners[4][2] = {{1, 1}, {0, 0}, {1, 0}, {0, 1}};
  std::vector<size_t> chosen;
  for (const auto& corner : corners) {
    if (chosen.size() >= k) break;
    size_t best = cands.size();
    double best_d = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < cands.size(); ++i) {
      if (std::find(chosen.begin(), chosen.end(), i) != chosen.end()) continue;
      const double u = scalar_knob(cands[i], k_min, k_max);
      const double lb = lb_max > lb_min ? (std::log2(static_cast<double>(cands[i].batch_size)) - lb_min) /
                                              (lb_max - lb_min)
                                        : 0;
      const double dist = (u - corner[0]) * (u - corner[0]) + (lb - corner[1]) * (lb - corner[1]);
      if (dist < best_d - 1e-12) {
        best_d = dist;
        best = i;
      }
    }
    if (best < cands.size()) chosen.push_back(best);
  }
  const size_t protected_count = chosen.size();

  const Design design = options.knob.kind == traces::KnobKind::gpu_freq && dims == 1 ? gpu_freq_design(cands, options)
                                                                                     : generic_design(cands);
  const auto is_chosen = [&](size_t i) { return std::find(chosen.begin(), chosen.end(), i) != chosen.end(); };
  while (chosen.size() < k) {
    size_t best = cands.size();
    double best_c = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < cands.size(); ++i) {
      if (is_chosen(i)) continue;
      chosen.push_back(i);
      const double c = criterion(design, chosen);
      chosen.pop_back();
      if (c > best_c + 1e-12) {
        best_c = c;
        best = i;
      }
    }
    chosen.push_back(best);
  }
  // Fedorov-style exchange: greedy choices can be improved by swapping one point at a time.
  for (int pass = 0; pass < options.exchange_passes; ++pass) {
    bool improved = false;
    for (size_t slot = protected_count; slot < chosen.size(); ++slot) {
      double current = criterion(design, chosen);
      for (size_t i = 0; i < cands.size(); ++i) {
        if (is_chosen(i)) continue;
        const size_t old = chosen[slot];
        chosen[slot] = i;
        const double c = criterion(design, chosen);
        if (c > current + 1e-9) {
          current = c;
          improved = true;
        } else {
          chosen[slot] = old;
        }
      }
    }
    if (!improved) break;
  }
  std::vector<PlanPoint> out;
  for (size_t i : chosen) out.push_back(cands[i]);
  return out;
}

}  // namespace pacer::models
