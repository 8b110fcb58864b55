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

// Step 2: the value at xs[i] predicted from the other points alone, as weights on those points
// (interpolation between the two neighbours, linear extrapolation from the two nearest at the ends).
std::vector<std::pair<size_t, double>> leave_one_out_weights(const std::vector<double>& xs, size_t i) {
  const size_t n = xs.size();
  if (i > 0 && i + 1 < n) {
    const double t = (xs[i] - xs[i - 1]) / (xs[i + 1] - xs[i - 1]);
    return {{i - 1, 1 - t}, {i + 1, t}};
  }
  const size_t near = i == 0 ? 1 : n - 2, far = i == 0 ? 2 : n - 3;
  const double u = (xs[i] - xs[near]) / (xs[near] - xs[far]);
  return {{near, 1 + u}, {far, -u}};
}

// The variance in log samples of counting in whole evaluation intervals (a uniform error of one
// interval, I^2/12, relative to the b's count): the seed spread a quantised count cannot show
// (Zeus's epochs: two runs of 5 epochs each may be 4.6 and 5.4 epochs of training).
double quantisation_var(const RelationModel& model, const BatchPosterior& p) {
  if (!(model.eval_interval > 0) || std::isnan(p.observed_log_mean)) return 0;
  const double rel = model.eval_interval / std::exp(p.observed_log_mean);
  return rel * rel / 12;
}

// The target interval of every b: centred on the log of a mean over seeds (the posterior mean
// plus s^2/2, the mean of a log-normal), log-sd from the proxy mean's uncertainty and the seed
// spread of the target's own mean over as many seeds, widened by the inflation; then the proxy ->
// target transfer's log-sd in quadrature (not inflated: it is estimated from other pairs, not seeds).
void add_target_intervals(RelationModel& model, const RelationModelOptions& options) {
  for (auto& p : model.by_batch) {
    const double mean_var = std::isnan(p.proxy_log_var) ? p.log_var : p.proxy_log_var;
    p.target_log_mean = p.log_mean + 0.5 * model.seed_var;
    const double seeds_sd =
        options.interval_inflation * std::sqrt(mean_var + (model.seed_var + quantisation_var(model, p)) / p.runs);
    p.target_log_sd = std::sqrt(seeds_sd * seeds_sd + options.transfer_log_sd * options.transfer_log_sd);
  }
}

}  // namespace

double BatchPosterior::expected_samples() const {
  return std::exp(log_mean + 0.5 * log_var);
}
double BatchPosterior::lower_samples() const {
  return std::exp(target_log_mean - kInterval90Z * target_log_sd);
}
double BatchPosterior::upper_samples() const {
  return std::exp(target_log_mean + kInterval90Z * target_log_sd);
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
  model.seed_df = df;
  model.eval_interval = static_cast<double>(std::max<int64_t>(0, runs.samples_per_epoch));
  const double s2 = model.seed_var * options.shrink;
  auto& bp = model.by_batch;
  if (bp.size() < 3) {  // no neighbours to learn a curve from: the per-b means, with their noise
    for (auto& p : bp) {
      p.log_mean = p.observed_log_mean;
      p.log_var = model.seed_var / p.runs;
      p.proxy_log_mean = p.log_mean;
      p.proxy_log_var = df > 0 ? p.log_var + quantisation_var(model, p) / p.runs : traces::kNaN;
    }
    add_target_intervals(model, options);
    return model;
  }
  std::vector<double> xs, ys;
  for (const auto& p : bp) {
    xs.push_back(std::log(static_cast<double>(p.batch_size)));
    ys.push_back(p.observed_log_mean);
  }
  double resid2 = 0, noise = 0;
  std::vector<double> prior_var(bp.size(), 0.0);  // variance of the prior's estimate from the neighbours
  for (size_t i = 0; i < bp.size(); ++i) {
    bp[i].prior_log = 0;
    for (const auto& [j, w] : leave_one_out_weights(xs, i)) {
      bp[i].prior_log += w * ys[j];
      prior_var[i] += w * w * model.seed_var / bp[j].runs;
    }
    resid2 += (ys[i] - bp[i].prior_log) * (ys[i] - bp[i].prior_log);
    noise += model.seed_var / bp[i].runs;
  }
  model.between_var = std::max((resid2 - noise) / static_cast<double>(bp.size()), kMinBetweenVar);
  for (size_t i = 0; i < bp.size(); ++i) {
    auto& p = bp[i];
    if (!(s2 > 0)) {  // identical seeds: the data are exact
      p.log_mean = p.observed_log_mean;
      p.log_var = 0;
      p.proxy_log_mean = p.log_mean;
      p.proxy_log_var = df > 0 ? quantisation_var(model, p) / p.runs : traces::kNaN;
      continue;
    }
    const double w_prior = 1 / model.between_var, w_data = p.runs / s2;
    p.log_mean = (w_prior * p.prior_log + w_data * p.observed_log_mean) / (w_prior + w_data);
    p.log_var = 1 / (w_prior + w_data);
    const double w_prior_all = 1 / (model.between_var + prior_var[i]);
    const double w_data_all = p.runs / (model.seed_var + quantisation_var(model, p));
    p.proxy_log_mean = (w_prior_all * p.prior_log + w_data_all * p.observed_log_mean) / (w_prior_all + w_data_all);
    p.proxy_log_var = 1 / (w_prior_all + w_data_all);
  }
  add_target_intervals(model, options);
  return model;
}

}  // namespace pacer::explore
