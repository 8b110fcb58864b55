#include "sim/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/stats.hpp"
#include "base/units.hpp"
#include "traces/csv.hpp"

namespace pacer::sim {
namespace {

int find_column(const traces::CsvTable& t, std::initializer_list<const char*> names, const std::string& origin) {
  for (size_t i = 0; i < t.header.size(); ++i)
    for (const char* n : names)
      if (t.header[i] == n) return static_cast<int>(i);
  throw Error(fmt::format("{}: the cap schedule needs the columns time_s,cap_w (header: time_s,cap_w)", origin));
}

// Power of one mini-batch as two constant phases: the compute phase at the peak, the rest at the
// level that keeps the batch's mean power exact.
struct Phases {
  double time_per_batch_s = 0;
  double high_w = 0, low_w = 0;
  double high_fraction = 1;  // of the batch's work
};

Phases phases_of(const models::Prediction& p, double compute_fraction) {
  Phases ph;
  ph.time_per_batch_s = p.time_per_batch_s;
  const double mean = base::energy_power_w(p.power_mean_w, p.power_peak_w);
  if (std::isnan(p.power_peak_w) || p.power_peak_w <= mean || compute_fraction >= 1) {
    ph.high_w = ph.low_w = mean;
    return ph;
  }
  double phi = compute_fraction;
  double low = (mean - phi * p.power_peak_w) / (1 - phi);
  if (low < 0.5 * mean) {  // a peak far above the mean: shorter compute phase instead of a negative low
    low = 0.5 * mean;
    phi = (mean - low) / (p.power_peak_w - low);
  }
  ph.high_w = p.power_peak_w;
  ph.low_w = low;
  ph.high_fraction = phi;
  return ph;
}

class Simulator {
 public:
  Simulator(const models::DeviceModel& model, const RunInput& input, const RunOptions& options)
      : model_(model), in_(input), opt_(options), rng_(options.noise_seed), period_s_(options.sample_period_s) {
    if (!(period_s_ > 0)) throw Error("the sensor sample period must be positive (e.g. 100 ms)");
    if (in_.knob_settings.empty()) throw Error("the simulator needs the device's knob settings (none given)");
    for (size_t i = 0; i < model_.knob().dims.size(); ++i)
      if (model_.knob().dims[i].name == "gpu_freq") freq_dim_ = static_cast<int>(i);
  }

  RunResult run() {
    cap_ = cap_at(in_.caps, 0);
    const auto first = in_.select ? in_.select(cap_) : std::nullopt;
    if (!first)
      throw Error(
          fmt::format("no configuration is feasible under the initial cap of {:g} W: raise the cap or the "
                      "schedule's first value",
                      cap_));
    apply_choice(*first);
    size_t next_change = 1;
    while (next_change < in_.caps.size() && in_.caps[next_change].time_s <= 0) ++next_change;
    r_.series.name = opt_.name;
    r_.series.emulated = true;
    r_.series.cap_w = in_.caps.empty() ? traces::kNaN : in_.caps.front().cap_w;
    open_segment();

    // Progress is a sum of b / N(b) terms: allow for its rounding so no spurious extra batch runs.
    while (progress_ < 1.0 - 1e-9) {
      // Cap changes at a mini-batch boundary re-select at once.
      while (next_change < in_.caps.size() && in_.caps[next_change].time_s <= t_) {
        cap_ = in_.caps[next_change++].cap_w;
        const auto choice = in_.select ? in_.select(cap_) : std::nullopt;
        if (choice)
          pending_ = *choice;
        else
          throttle();
        ++r_.reselections;
      }
      if (pending_) {  // re-selection takes effect at a mini-batch boundary
        apply_choice(*pending_);
        pending_.reset();
        close_segment();
        open_segment();
      }
      govern_at_batch_start();
      const Phases* ph = &phases_[level_];
      double u = 0;  // work done in this mini-batch, as a fraction
      while (u < 1.0) {
        const double u_end = u < ph->high_fraction ? ph->high_fraction : 1.0;
        const double p_w = u < ph->high_fraction ? ph->high_w : ph->low_w;
        double dt = (u_end - u) * ph->time_per_batch_s;
        const double change_t = next_change < in_.caps.size() ? in_.caps[next_change].time_s : INFINITY;
        if (t_ + dt > change_t) {
          dt = change_t - t_;
          emit(p_w, dt);
          u += dt / ph->time_per_batch_s;
          cap_ = in_.caps[next_change++].cap_w;
          // Circuit-level: the throttle acts at once; the new (knob, b) waits for the batch end.
          throttle();
          ph = &phases_[level_];
          const auto choice = in_.select ? in_.select(cap_) : std::nullopt;
          if (choice) pending_ = *choice;
          ++r_.reselections;
          continue;
        }
        emit(p_w, dt);
        u = u_end;
      }
      progress_ += choice_.batch_size / samples_to_target_;
      ++r_.batches;
      ++segment_.batches;
      if (level_ != requested_) ++r_.throttled_batches;
    }
    close_segment();
    r_.reached = true;
    r_.time_s = t_;
    finish_series();
    return std::move(r_);
  }

 private:
  void apply_choice(const Choice& c) {
    const auto it = in_.samples_to_target.find(c.batch_size);
    if (it == in_.samples_to_target.end() || !(it->second > 0))
      throw Error(
          fmt::format("no samples-to-target for b={} in the relation: pick a batch size the target relation "
                      "set has reached",
                      c.batch_size));
    samples_to_target_ = it->second;
    choice_ = c;
    // The governor's ladder: ascending knob for a 1-D knob (as devfreq steps down), ascending
    // power for a multi-dimensional mode.
    ladder_ = in_.knob_settings;
    std::sort(ladder_.begin(), ladder_.end());
    phases_.clear();
    for (const auto& k : ladder_) phases_.push_back(phases_of(model_.predict(k, c.batch_size), opt_.compute_fraction));
    if (ladder_.front().size() > 1) {
      std::vector<size_t> idx(ladder_.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(),
                       [&](size_t a, size_t b) { return phases_[a].high_w < phases_[b].high_w; });
      std::vector<std::vector<double>> l;
      std::vector<Phases> p;
      for (size_t i : idx) {
        l.push_back(ladder_[i]);
        p.push_back(phases_[i]);
      }
      ladder_ = std::move(l);
      phases_ = std::move(p);
    }
    const auto pos = std::find(ladder_.begin(), ladder_.end(), c.knob);
    if (pos == ladder_.end()) throw Error("the selected knob setting is not one of the device's settings");
    requested_ = static_cast<size_t>(pos - ladder_.begin());
    level_ = requested_;
    throttle();
  }

  void throttle() {
    if (!opt_.governor || std::isnan(cap_)) {
      level_ = requested_;
      return;
    }
    while (level_ > 0 && phases_[level_].high_w > cap_) --level_;
  }

  void govern_at_batch_start() {
    if (!opt_.governor || std::isnan(cap_)) {
      level_ = requested_;
      return;
    }
    if (level_ > requested_) level_ = requested_;
    throttle();
    // Recover one step per mini-batch towards the requested setting when it fits again.
    if (level_ < requested_ && phases_[level_ + 1].high_w <= cap_) ++level_;
  }

  void emit(double p_w, double dt) {
    if (dt <= 0) return;
    const double end = t_ + dt;
    while (next_sample_t_ < end) {
      const double noise = opt_.noise_std_w > 0 ? std::normal_distribution<double>(0, opt_.noise_std_w)(rng_) : 0.0;
      r_.series.time_s.push_back(next_sample_t_);
      r_.series.power_w.push_back(p_w + noise);
      if (freq_dim_ >= 0) r_.series.freq_hz.push_back(ladder_[level_][static_cast<size_t>(freq_dim_)]);
      r_.max_measured_power_w = std::max(r_.max_measured_power_w, p_w + noise);
      next_sample_t_ += period_s_;
      if (r_.series.time_s.size() >= opt_.max_series_samples) decimate();
    }
    r_.energy_j += p_w * dt;
    r_.max_true_power_w = std::max(r_.max_true_power_w, p_w);
    if (!std::isnan(cap_) && p_w > cap_ * (1 + 1e-12)) r_.time_over_cap_s += dt;
    t_ = end;
  }

  void decimate() {
    auto keep_even = [](std::vector<double>& v) {
      size_t j = 0;
      for (size_t i = 0; i < v.size(); i += 2) v[j++] = v[i];
      v.resize(j);
    };
    keep_even(r_.series.time_s);
    keep_even(r_.series.power_w);
    keep_even(r_.series.freq_hz);
    period_s_ *= 2;
    next_sample_t_ = r_.series.time_s.back() + period_s_;
  }

  void open_segment() {
    segment_ = Segment{};
    segment_.start_s = t_;
    segment_.cap_w = cap_;
    segment_.requested = choice_;
    segment_.progress_start = progress_;
  }
  void close_segment() {
    segment_.end_s = t_;
    segment_.progress_end = std::min(progress_, 1.0);
    r_.segments.push_back(segment_);
  }

  void finish_series() {
    // The sampler's view ends at its last reading; extended to the run's end with that reading
    // (the first reading is at t = 0).
    if (!r_.series.time_s.empty())
      r_.energy_sampled_j = base::trapezoid_energy_j(r_.series.time_s, r_.series.power_w, t_);
  }

  const models::DeviceModel& model_;
  const RunInput& in_;
  const RunOptions& opt_;
  std::mt19937_64 rng_;
  double period_s_;
  int freq_dim_ = -1;

  RunResult r_;
  double t_ = 0, next_sample_t_ = 0, progress_ = 0;
  double cap_ = traces::kNaN;
  Choice choice_;
  std::optional<Choice> pending_;
  double samples_to_target_ = 0;
  std::vector<std::vector<double>> ladder_;
  std::vector<Phases> phases_;
  size_t requested_ = 0, level_ = 0;
  Segment segment_;
};

}  // namespace

std::vector<CapStep> parse_cap_schedule(const std::string& csv_text, const std::string& origin) {
  const auto t = traces::parse_csv(csv_text, origin);
  const int ct = find_column(t, {"time_s", "time[s]"}, origin);
  const int cc = find_column(t, {"cap_w", "cap[W]"}, origin);
  std::vector<CapStep> out;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    CapStep s;
    // The option parser's units: "7000mW" is 7 W and "2min" 120 s; a bare number is s or W.
    const std::string where = fmt::format("{}: row {}", origin, i + 2);
    try {
      s.time_s = units::parse(t.rows[i].at(ct), units::Dimension::Time, "s", where + " time_s");
      s.cap_w = units::parse(t.rows[i].at(cc), units::Dimension::Power, "W", where + " cap_w");
    } catch (const UsageError& e) {
      throw Error(fmt::format("{} (times in s, min, h; caps in W, mW, kW)", e.what()));
    } catch (const std::out_of_range&) {
      throw Error(fmt::format("{}: time_s and cap_w are both needed", where));
    }
    if (!(s.cap_w > 0) || !(s.time_s >= 0))
      throw Error(fmt::format("{}: row {}: need time_s >= 0 and cap_w > 0", origin, i + 2));
    if (!out.empty() && s.time_s <= out.back().time_s)
      throw Error(fmt::format("{}: row {}: times must increase", origin, i + 2));
    out.push_back(s);
  }
  if (out.empty()) throw Error(fmt::format("{}: the cap schedule has no rows", origin));
  if (out.front().time_s != 0) throw Error(fmt::format("{}: the first cap must start at time_s = 0", origin));
  return out;
}

std::vector<CapStep> read_cap_schedule(const std::filesystem::path& path) {
  // A folder, FIFO or device is refused there, naming what it is.
  return parse_cap_schedule(base::read_regular_file(path, base::kMaxDataFileBytes, "cap schedule"), path.string());
}

double cap_at(const std::vector<CapStep>& schedule, double time_s) {
  double cap = traces::kNaN;
  for (const auto& s : schedule)
    if (s.time_s <= time_s) cap = s.cap_w;
  return cap;
}

void check_run_options(const RunOptions& o) {
  if (!(o.sample_period_s >= kMinSamplePeriodS && o.sample_period_s <= kMaxSamplePeriodS))
    throw SettingError("sample-period", fmt::format("{:g} s is outside {:g} s to {:g} s: a power sensor's period",
                                                    o.sample_period_s, kMinSamplePeriodS, kMaxSamplePeriodS));
  if (!(o.noise_std_w >= 0 && o.noise_std_w < kMaxNoiseStdW))
    throw SettingError("noise", fmt::format("{:g} W is not a sensor noise: give a standard deviation from 0 W to "
                                            "below {:g} W",
                                            o.noise_std_w, kMaxNoiseStdW));
}

RunResult run(const models::DeviceModel& model, const RunInput& input, const RunOptions& options) {
  check_run_options(options);
  return Simulator(model, input, options).run();
}

}  // namespace pacer::sim
