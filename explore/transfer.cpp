#include "explore/transfer.hpp"

#include <cmath>
#include <map>

#include "base/stats.hpp"

namespace pacer::explore {
namespace {

struct LogRuns {
  std::map<int, std::vector<double>> by_batch;  // log samples of the reached runs
  double seed_var = 0;                          // pooled within-b variance (0: unknown)
};

LogRuns log_runs(const traces::RelationSet& set) {
  LogRuns out;
  for (const auto& r : set.runs)
    if (r.reached && r.samples > 0) out.by_batch[r.batch_size].push_back(std::log(static_cast<double>(r.samples)));
  double ss = 0;
  int df = 0;
  for (const auto& [b, v] : out.by_batch) {
    const double m = base::mean(v);
    for (double x : v) ss += (x - m) * (x - m);
    df += static_cast<int>(v.size()) - 1;
  }
  out.seed_var = df > 0 ? ss / df : 0;
  return out;
}

std::string base_name(const std::string& dataset) {
  const auto p = dataset.find(" (");
  return p == std::string::npos ? dataset : dataset.substr(0, p);
}

}  // namespace

TransferPair transfer_pair(const traces::RelationSet& proxy, const traces::RelationSet& target) {
  TransferPair t;
  t.proxy = proxy.name;
  t.target = target.name;
  const LogRuns p = log_runs(proxy), q = log_runs(target);
  std::vector<double> r, noise;
  for (const auto& [b, vp] : p.by_batch) {
    const auto it = q.by_batch.find(b);
    if (it == q.by_batch.end()) continue;
    r.push_back(base::mean(it->second) - base::mean(vp));
    noise.push_back(p.seed_var / static_cast<double>(vp.size()) + q.seed_var / static_cast<double>(it->second.size()));
  }
  t.batches = static_cast<int>(r.size());
  if (r.empty()) return t;
  t.mean_log_ratio = base::mean(r);
  double sq = 0, dev = 0;
  for (double x : r) {
    sq += x * x;
    dev += (x - t.mean_log_ratio) * (x - t.mean_log_ratio);
  }
  sq /= static_cast<double>(r.size());
  t.rms_log_ratio = std::sqrt(sq);
  t.noise_var = base::mean(noise);
  t.level_var = std::max(0.0, sq - t.noise_var);
  if (r.size() > 1) t.shape_var = dev / static_cast<double>(r.size() - 1);
  return t;
}

bool same_data_set(const traces::RelationSet& proxy, const traces::RelationSet& target) {
  return !proxy.dataset.empty() && base_name(proxy.dataset) == base_name(target.dataset);
}

TransferSd transfer_sd(const traces::RelationSet& proxy, const traces::RelationSet* target) {
  if (target && same_data_set(proxy, *target)) return {};
  return {kTransferLogSd, kTransferShapeSd};
}

TransferSd pooled_transfer_sd(const std::vector<TransferPair>& pairs, int skip) {
  double v = 0, s = 0;
  int nv = 0, ns = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (static_cast<int>(i) == skip) continue;
    if (!std::isnan(pairs[i].level_var)) v += pairs[i].level_var, ++nv;
    if (!std::isnan(pairs[i].shape_var)) s += pairs[i].shape_var, ++ns;
  }
  return {nv ? std::sqrt(v / nv) : traces::kNaN, ns ? std::sqrt(s / ns) : traces::kNaN};
}

}  // namespace pacer::explore
