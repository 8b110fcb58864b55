#pragma once
// The design space: configurations (knob setting, batch size) with their cost per mini-batch,
// generic over the knob (GPU frequency, GPU power limit, multi-dimensional Jetson power mode),
// built from measured data (ProfileTable) or from a DeviceModel evaluated on a grid. The Index
// precomputes, once per space, what every search needs per batch size, so one selection is
// O(|B| log |K|) whatever the cap.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/device_model.hpp"
#include "traces/records.hpp"

namespace pacer::explore {

// Which power decides feasibility under P_max: the peak where the data has it, else the mean.
enum class PowerBasis { Peak, Mean };
std::string_view to_string(PowerBasis basis);

// A measured point's feasibility power on the peak basis is its own projected run peak
// (docs/explore.md, "The guard"): a profile point's peak is the max of its m power samples, and a
// run of n samples peaks higher, as the max of n noisy samples grows with n. Per-sample power ~
// mean + sigma x N(0, 1), sigma read from the point's spread: sigma = (peak - mean) / z(m, 1/2)
// (z(k, q) = the q-quantile of the max of k standard normals, Phi^-1(q^(1/k))). The run's projected
// peak is mean + sigma x z(n, kRunPeakQuantile) with n = kRunSamplesPerProfileSample x m (a run ten
// times the profile's measurement: 31 samples at 10 Hz -> 310, a 31 s run), its growth above the
// mean widened by kRunPeakSpreadFactor: real power is burstier than a Gaussian around its mean, and
// a window that misses a burst reads a small spread (the factor is chosen by leave-one-log-out on
// the shipped tegrastats logs, docs/explore.md "The guard").
inline constexpr double kRunPeakQuantile = 0.95;
inline constexpr double kRunSamplesPerProfileSample = 10;
inline constexpr double kRunPeakSpreadFactor = 1.4;
// The q-quantile of the max of k independent standard normal draws.
double max_of_normals_quantile(double k, double q);
// The projection, mean + kRunPeakSpreadFactor x sigma x z(n, kRunPeakQuantile) (at least the peak);
// the peak itself without a spread (peak <= mean, no mean) or with fewer than 2
// samples (an imported or older profile, a predicted table written before predicted points carried
// models::stated_power_samples).
double projected_run_peak_w(double peak_w, double mean_w, double power_samples);
// The power of profile point `p` that decides its feasibility on `basis`: its projected run peak, or
// its mean. The one definition Space::from_profile, Space::overlay_measured and the validation's
// probes use.
double feasibility_power_w(const traces::ProfilePoint& p, PowerBasis basis);
// What a measured profile point says about its configuration where it meets a prediction (measured
// wins): its power (Power: status ok, a time and a finite feasibility power on `basis`), that the
// configuration failed when measured (Failed: the watchdog stopped it or the profiler skipped it: it
// is in no command's space), or nothing (Nothing: a fault of the power sensor or of cur_freq, which
// the next profile run measures again, or a measurement without a power on `basis`, a mean-only
// profile beside a space on the peak basis; the prediction stays).
// The one test Space::overlay_measured and the validation's probes use.
enum class Measurement { Power, Failed, Nothing };
Measurement measurement_of(const traces::ProfilePoint& p, PowerBasis basis);
// The feasibility text of a basis: "peak power (a measured peak projected to a run of 10x its
// samples, 95th percentile, spread x 1.4)" or "mean power".
std::string describe_basis(PowerBasis basis);

class Space {
 public:
  // Uses only points with status "ok" and a finite time. Peak basis when every point has a peak;
  // a point's power is feasibility_power_w.
  static Space from_profile(const traces::ProfileTable& table, std::optional<PowerBasis> basis = {});

  struct Grid {
    std::vector<std::vector<double>> knob_settings;  // e.g. the catalog's frequency table
    std::vector<int> batch_sizes;
  };
  // Evaluates the model on every grid point (points it cannot predict are left out). A predicted
  // peak is projected to a run as a measured one over `power_samples` readings would be
  // (projected_run_peak_w; models::stated_power_samples of the calibration, 0: the peak as predicted).
  static Space from_model(const models::DeviceModel& model, const Grid& grid, const std::string& source,
                          double power_samples = 0);

  const std::string& source() const { return source_; }
  const traces::KnobSpace& knob() const { return knob_; }
  PowerBasis basis() const { return basis_; }
  const std::vector<std::vector<double>>& knob_settings() const { return knobs_; }  // ascending
  const std::vector<int>& batch_sizes() const { return batches_; }                  // ascending
  size_t num_knobs() const { return knobs_.size(); }
  size_t num_batches() const { return batches_.size(); }
  std::optional<size_t> batch_index(int batch_size) const;
  std::optional<size_t> knob_index(const std::vector<double>& knob) const;

  bool has(size_t bi, size_t ki) const { return !std::isnan(time_[at(bi, ki)]); }
  double time_per_batch_s(size_t bi, size_t ki) const { return time_[at(bi, ki)]; }
  double power_w(size_t bi, size_t ki) const { return power_[at(bi, ki)]; }  // the feasibility basis
  double power_mean_w(size_t bi, size_t ki) const { return mean_[at(bi, ki)]; }
  // Power that multiplies time into energy: the mean, or the basis power when no mean is known.
  double energy_power_w(size_t bi, size_t ki) const;
  double max_power_w() const;  // highest basis power in the space
  double min_power_w() const;

  // Builds a space directly (tests, synthetic benchmarks). Arrays are [bi * num_knobs + ki].
  struct Arrays {
    traces::KnobSpace knob;
    std::vector<std::vector<double>> knob_settings;
    std::vector<int> batch_sizes;
    PowerBasis basis = PowerBasis::Peak;
    std::vector<double> time_per_batch_s, power_w, power_mean_w;  // power_mean_w may be empty
    std::string source = "synthetic";
  };
  static Space from_arrays(Arrays arrays);

  std::string describe_knob(const std::vector<double>& knob) const;  // "921.6 MHz", "250 W"

  // Measured wins (explore/decide.hpp): every configuration of this space that `measured` has as an
  // ok point with this space's basis power takes that point's measured power (feasibility_power_w
  // and mean) in place of the prediction; times stay the model's. A configuration whose measurement
  // failed (measurement_of: Failed) leaves the space. Returns how many configurations took a
  // measured power. Every command's space goes through it (load_problem, the report's figures,
  // validation's choice step). Call it before building an Index on the space.
  size_t overlay_measured(const traces::ProfileTable& measured);
  // Whether configuration (bi, ki) took a measured power in overlay_measured.
  bool overlaid(size_t bi, size_t ki) const { return !overlaid_.empty() && overlaid_[at(bi, ki)]; }
  size_t num_points() const;  // configurations with data

 private:
  size_t at(size_t bi, size_t ki) const { return bi * knobs_.size() + ki; }
  void validate();

  std::vector<bool> overlaid_;  // overlay_measured's configurations (empty: none)
  std::string source_;
  traces::KnobSpace knob_;
  PowerBasis basis_ = PowerBasis::Mean;
  std::vector<std::vector<double>> knobs_;
  std::vector<int> batches_;
  std::vector<double> time_, power_, mean_;
};

// Per-configuration cost that a front minimises within one batch size. The relation's factor
// N(b)/b is the same for every knob at one b, so it is applied after the per-b search.
enum class Objective { Time, Energy, ZeusCost };

struct IndexOptions {
  double eta = 0.5;  // Zeus cost: eta * energy + (1 - eta) * max_power * time
  // Zeus's MAXPOWER. NaN: Zeus's own definition where the knob is a power limit (the highest power
  // limit of the space), else the space's highest power.
  double max_power_w = traces::kNaN;
};

// Precomputed per batch size: the knob order with its power (for Algorithm 1's binary search,
// valid when power rises with the knob), and the front: settings sorted by power with the prefix
// argmin of each objective (exact for any data, no monotonicity assumed).
class Index {
 public:
  explicit Index(const Space& space, IndexOptions options = {});
  const Space& space() const { return *space_; }
  const IndexOptions& options() const { return options_; }
  double max_power_w() const { return max_power_w_; }                        // the Zeus cost's MAXPOWER
  const std::string& max_power_source() const { return max_power_source_; }  // "the highest power limit", ...

  // Algorithm 1's per-b step: the highest knob whose power is <= cap (binary search when the
  // power is monotone in the knob at this b, a downward scan otherwise). nullopt: none.
  std::optional<size_t> highest_feasible_knob(size_t bi, double cap_w) const;
  // Same answer by a plain scan from the top (the brute force the benchmark compares against).
  std::optional<size_t> highest_feasible_knob_scan(size_t bi, double cap_w) const;
  // The front's step: the feasible knob minimising `objective` at this b (ties: lower power, then
  // lower knob). nullopt: none.
  std::optional<size_t> best_feasible_knob(size_t bi, double cap_w, Objective objective) const;
  // Per-configuration objective (per mini-batch): seconds, joules or Zeus cost units.
  double unit_cost(size_t bi, size_t ki, Objective objective) const;
  bool monotone(size_t bi) const { return per_b_[bi].monotone; }
  bool one_dimensional() const { return space_->knob().dims.size() == 1; }

 private:
  struct PerBatch {
    std::vector<uint32_t> knob_order;   // knob indices with data, ascending knob
    std::vector<double> knob_power;     // their power, same order
    bool monotone = true;               // knob_power non-decreasing
    std::vector<uint32_t> power_order;  // knob indices sorted by (power, knob)
    std::vector<double> sorted_power;
    std::vector<uint32_t> best_time, best_energy, best_zeus;  // prefix argmin along power_order
  };
  const Space* space_;
  IndexOptions options_;
  double max_power_w_ = 0;
  std::string max_power_source_;
  std::vector<PerBatch> per_b_;
};

// Baseline 1's device-wide knob cap: the highest knob setting at which every given space (one per
// workload profiled on the device) stays under P_max at every batch size it has. For multi-dim
// knobs "highest" is the setting allowed to draw the most power (ties: lexicographically highest).
class DeviceWideCap {
 public:
  explicit DeviceWideCap(const std::vector<const Space*>& spaces);
  std::optional<std::vector<double>> knob_for(double cap_w) const;

 private:
  std::vector<std::vector<double>> knobs_;  // sorted by worst-case power
  std::vector<double> worst_power_;         // ascending
  std::vector<uint32_t> best_prefix_;       // index into knobs_ of the highest setting so far
};

}  // namespace pacer::explore
