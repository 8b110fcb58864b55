#include "explore/relation_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "base/stats.hpp"

namespace pacer::explore {
namespace {

// Smallest between-b variance: keeps the posterior finite when the curve fits the means exactly.
constexpr double kMinBetweenVar = 1e-8;

// The learning curve's last step, d(b) = log N_target - log N_looser, as a least-squares line in
// log b over every run that reached both levels (a constant when those runs share one b). Its slope
// matters: on the Zeus traces the last step takes 1.6x the looser level's samples at b = 16 and 3.5x
// at b = 4096, so one offset for every b would bias the large and small batch sizes apart.
struct GapLine {
  base::Line line;
  double at(int batch_size) const { return line.at(std::log(static_cast<double>(batch_size))); }
  bool valid() const { return !std::isnan(line.intercept); }
};

GapLine fit_gap(const traces::RelationSet& set, const std::map<std::pair<int, int>, double>& looser_log) {
  std::vector<double> log_b, gap;
  for (const auto& r : set.runs) {
    const auto it = looser_log.find({r.batch_size, r.seed});
    if (!r.reached || r.samples <= 0 || it == looser_log.end()) continue;
    log_b.push_back(std::log(static_cast<double>(r.batch_size)));
    gap.push_back(std::log(static_cast<double>(r.samples)) - it->second);
  }
  return {base::least_squares_line(log_b, gap)};
}

// Step 1: log samples-to-target of every run, by batch size; censored runs without a learning
// curve are imputed afterwards (at least the b's mean of the other runs).
std::map<int, std::vector<double>> run_values(const traces::RelationSet& set, const traces::RelationSet* looser,
                                              double own_weight) {
  std::map<std::pair<int, int>, double> looser_log;  // (b, seed) -> log samples at the looser level
  if (looser)
    for (const auto& r : looser->runs)
      if (r.reached && r.samples > 0) looser_log[{r.batch_size, r.seed}] = std::log(static_cast<double>(r.samples));
  const GapLine gap = fit_gap(set, looser_log);
  const double interval = static_cast<double>(std::max<int64_t>(0, set.samples_per_epoch));

  std::map<int, std::vector<double>> values;
  std::map<int, std::vector<double>> censored_floor;
  for (const auto& r : set.runs) {
    const auto it = looser_log.find({r.batch_size, r.seed});
    const bool curve = it != looser_log.end() && gap.valid();
    const double predicted = curve ? it->second + gap.at(r.batch_size) : traces::kNaN;
    if (r.reached && r.samples > 0) {
      const double own = std::log(static_cast<double>(r.samples));
      values[r.batch_size].push_back(curve ? own_weight * own + (1 - own_weight) * predicted : own);
      continue;
    }
    if (r.reached) continue;  // a zero count carries no information
    const double floor = std::log(std::max(1.0, static_cast<double>(r.budget_samples) + interval));
    if (curve)
      values[r.batch_size].push_back(std::max(predicted, floor));
    else
      censored_floor[r.batch_size].push_back(floor);
  }
  for (const auto& [b, floors] : censored_floor) {
    auto& v = values[b];
    double m = -INFINITY;
    if (!v.empty()) {
      m = 0;
      for (double x : v) m += x;
      m /= static_cast<double>(v.size());
    }
    for (double f : floors) v.push_back(std::max(f, m));
  }
  return values;
}

// Step 2: the value at xs[i] predicted from the other points alone.
double leave_one_out_prior(const std::vector<double>& xs, const std::vector<double>& ys, size_t i) {
  const size_t n = xs.size();
  if (i > 0 && i + 1 < n) {
    const double t = (xs[i] - xs[i - 1]) / (xs[i + 1] - xs[i - 1]);
    return ys[i - 1] * (1 - t) + ys[i + 1] * t;
  }
  const size_t near = i == 0 ? 1 : n - 2, far = i == 0 ? 2 : n - 3;
  const double slope = (ys[near] - ys[far]) / (xs[near] - xs[far]);
  return ys[near] + slope * (xs[i] - xs[near]);
}

}  // namespace

double BatchPosterior::expected_samples() const {
  return std::exp(log_mean + 0.5 * log_var);
}
double BatchPosterior::lower_samples() const {
  return std::exp(log_mean - kInterval90Z * std::sqrt(log_var));
}
double BatchPosterior::upper_samples() const {
  return std::exp(log_mean + kInterval90Z * std::sqrt(log_var));
}

const BatchPosterior* RelationModel::find(int batch_size) const {
  for (const auto& p : by_batch)
    if (p.batch_size == batch_size) return &p;
  return nullptr;
}

RelationModel fit_relation_model(const traces::RelationSet& runs, const traces::RelationSet* looser,
                                 const RelationModelOptions& options) {
  const auto values = run_values(runs, options.use_learning_curve ? looser : nullptr, options.own_weight);
  RelationModel model;
  double ss = 0;
  int df = 0;
  for (const auto& [b, v] : values) {
    if (v.empty()) continue;
    BatchPosterior p;
    p.batch_size = b;
    p.runs = static_cast<int>(v.size());
    double m = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    p.observed_log_mean = m;
    for (double x : v) ss += (x - m) * (x - m);
    df += p.runs - 1;
    model.by_batch.push_back(p);
  }
  model.seed_var = df > 0 ? ss / df : 0.0;
  const double s2 = model.seed_var * options.shrink;
  auto& bp = model.by_batch;
  if (bp.size() < 3) {  // no neighbours to learn a curve from: the per-b means, with their noise
    for (auto& p : bp) {
      p.log_mean = p.observed_log_mean;
      p.log_var = model.seed_var / p.runs;
    }
    return model;
  }
  std::vector<double> xs, ys;
  for (const auto& p : bp) {
    xs.push_back(std::log(static_cast<double>(p.batch_size)));
    ys.push_back(p.observed_log_mean);
  }
  double resid2 = 0, noise = 0;
  for (size_t i = 0; i < bp.size(); ++i) {
    bp[i].prior_log = leave_one_out_prior(xs, ys, i);
    resid2 += (ys[i] - bp[i].prior_log) * (ys[i] - bp[i].prior_log);
    noise += model.seed_var / bp[i].runs;
  }
  model.between_var = std::max((resid2 - noise) / static_cast<double>(bp.size()), kMinBetweenVar);
  for (auto& p : bp) {
    if (!(s2 > 0)) {  // identical seeds: the data are exact
      p.log_mean = p.observed_log_mean;
      p.log_var = 0;
      continue;
    }
    const double w_prior = 1 / model.between_var, w_data = p.runs / s2;
    p.log_mean = (w_prior * p.prior_log + w_data * p.observed_log_mean) / (w_prior + w_data);
    p.log_var = 1 / (w_prior + w_data);
  }
  return model;
}

}  // namespace pacer::explore
