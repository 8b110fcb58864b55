#pragma once
// The one declaration of every record's fields, gem5 ADD_STAT style: {name, unit, member}. The
// HDF5 writer and reader (traces/store/codecs.hpp), the CSV export (rows_csv, traces/csv.hpp), the
// record comparisons (traces/records.cpp) and the schema in docs/trace-store.md (checked by
// tests/traces/store/test_store_format.cpp) all follow from these tables: a new column is one line
// here. Each record type's entry (traces/record_traits.hpp) names its tables.
//
// A row table (kProfilePointColumns, ...) lists the columns of a record's rows: one 1-D dataset
// per field, in this order in the CSV export. Two units are placeholders: kKnobUnit marks the knob
// (a 2-D dataset whose units come from the record's KnobSpace, one CSV column per dimension) and
// kMetricUnit the record's own metric ("accuracy"). Strings have no unit.
// An attribute table (kProfileTableAttributes, ...) lists a record's scalars: one HDF5 attribute
// each, whose name carries the unit (profiling_cost_s).
#include <array>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "traces/records.hpp"

namespace pacer::traces {

inline constexpr std::string_view kKnobUnit = "<knob>";
inline constexpr std::string_view kMetricUnit = "<metric>";

template <typename S>
struct Field {
  using Member =
      std::variant<double S::*, int S::*, int64_t S::*, bool S::*, std::string S::*, std::vector<double> S::*>;
  std::string_view name;
  std::string_view unit;  // "" for strings and attributes
  Member member;
  bool optional = false;  // absent in stores written before it existed: read as the default
};

// ---------------------------------------------------------------------------------------------
// ProfileTable
inline constexpr std::array<Field<ProfileTable>, 10> kProfileTableAttributes{{
    {"workload", "", &ProfileTable::workload},
    {"device", "", &ProfileTable::device},
    {"emulated", "", &ProfileTable::emulated},
    {"virtual_time", "", &ProfileTable::virtual_time},
    {"source", "", &ProfileTable::source},
    {"samples_per_epoch", "", &ProfileTable::samples_per_epoch},
    {"warmup_batches", "", &ProfileTable::warmup_batches},
    {"measured_batches", "", &ProfileTable::measured_batches},
    {"profiling_cost_s", "", &ProfileTable::profiling_cost_s},
    {"floating_clocks", "", &ProfileTable::floating_clocks, true},
}};
inline constexpr std::array<Field<ProfilePoint>, 14> kProfilePointColumns{{
    {"knob", kKnobUnit, &ProfilePoint::knob},
    {"batch_size", "samples", &ProfilePoint::batch_size},
    {"time_per_batch_mean", "s", &ProfilePoint::time_per_batch_mean_s},
    {"time_per_batch_std", "s", &ProfilePoint::time_per_batch_std_s},
    {"power_peak", "W", &ProfilePoint::power_peak_w},
    {"power_mean", "W", &ProfilePoint::power_mean_w},
    {"energy", "J", &ProfilePoint::energy_j},
    {"samples", "samples", &ProfilePoint::samples},
    {"power_samples", "1", &ProfilePoint::power_samples},
    {"sensor_rate", "Hz", &ProfilePoint::sensor_rate_hz},
    {"temperature", "degC", &ProfilePoint::temperature_c},
    {"status", "", &ProfilePoint::status},
    {"node", "", &ProfilePoint::node, true},                // added with board fleets (docs/cluster.md)
    {"board_model", "", &ProfilePoint::board_model, true},  // added with board fleets
}};

// ---------------------------------------------------------------------------------------------
// RelationSet
inline constexpr std::array<Field<RelationSet>, 17> kRelationSetAttributes{{
    {"name", "", &RelationSet::name},
    {"workload", "", &RelationSet::workload},
    {"dataset", "", &RelationSet::dataset},
    {"metric", "", &RelationSet::metric},
    {"higher_is_better", "", &RelationSet::higher_is_better},
    {"target", "", &RelationSet::target},
    {"lr_rule", "", &RelationSet::lr_rule},
    {"base_lr", "", &RelationSet::base_lr},
    {"base_batch", "", &RelationSet::base_batch},
    {"optimizer", "", &RelationSet::optimizer},
    {"samples_per_epoch", "", &RelationSet::samples_per_epoch},
    // Added with the check of a resumed or reused relation's training settings (absent: not recorded).
    {"train_samples", "", &RelationSet::train_samples, true},
    {"eval_samples", "", &RelationSet::eval_samples, true},
    {"split_seed", "", &RelationSet::split_seed, true},
    {"eval_every", "", &RelationSet::eval_every, true},
    {"eval_stop", "", &RelationSet::eval_stop, true},
    {"checkpoint", "", &RelationSet::checkpoint, true},
}};
inline constexpr std::array<Field<RelationRun>, 9> kRelationRunColumns{{
    {"batch_size", "samples", &RelationRun::batch_size},
    {"seed", "1", &RelationRun::seed},
    {"reached", "bool", &RelationRun::reached},
    {"samples", "samples", &RelationRun::samples},
    {"budget", "samples", &RelationRun::budget_samples},
    {"wall_time", "s", &RelationRun::wall_time_s},
    {"final_metric", kMetricUnit, &RelationRun::final_metric},
    {"learning_rate", "1", &RelationRun::learning_rate},
    {"threads", "1", &RelationRun::threads, true},  // added with load-independent training (0: not recorded)
}};

// ---------------------------------------------------------------------------------------------
// LearningCurve
inline constexpr std::array<Field<LearningCurve>, 4> kLearningCurveAttributes{{
    {"name", "", &LearningCurve::name},
    {"metric", "", &LearningCurve::metric},
    {"higher_is_better", "", &LearningCurve::higher_is_better},
    {"source", "", &LearningCurve::source},
}};
inline constexpr std::array<Field<CurvePoint>, 4> kCurvePointColumns{{
    {"batch_size", "samples", &CurvePoint::batch_size},
    {"seed", "1", &CurvePoint::seed},
    {"samples", "samples", &CurvePoint::samples},
    {"metric", kMetricUnit, &CurvePoint::metric},
}};

// ---------------------------------------------------------------------------------------------
// AdaptiveLog
inline constexpr std::array<Field<AdaptiveLog>, 11> kAdaptiveLogAttributes{{
    {"name", "", &AdaptiveLog::name},
    {"tolerance", "1", &AdaptiveLog::tolerance},
    {"compute_budget", "samples", &AdaptiveLog::compute_budget},
    {"profile", "", &AdaptiveLog::profile},
    {"extrapolation", "", &AdaptiveLog::extrapolation, true},
    {"first_round", "1", &AdaptiveLog::first_round, true},
    {"budget_first_share", "1", &AdaptiveLog::budget_first_share, true},
    {"caps", "1", &AdaptiveLog::caps, true},
    {"guard", "", &AdaptiveLog::guard, true},
    {"compute_budget_asked", "", &AdaptiveLog::compute_budget_asked, true},
    {"run_budget", "samples", &AdaptiveLog::run_budget, true},
}};
inline constexpr std::array<Field<AdaptiveLogRow>, 8> kAdaptiveLogRowColumns{{
    {"round", "1", &AdaptiveLogRow::round},
    {"action", "", &AdaptiveLogRow::action},
    {"batch_size", "samples", &AdaptiveLogRow::batch_size},
    {"seed", "1", &AdaptiveLogRow::seed},
    {"budget", "samples", &AdaptiveLogRow::budget_samples},
    {"compute", "samples", &AdaptiveLogRow::compute_samples},
    {"expected_regret", "1", &AdaptiveLogRow::expected_regret},
    {"reason", "", &AdaptiveLogRow::reason},
}};

// ---------------------------------------------------------------------------------------------
// ModelRecord (its parameters, metrics, settings and blob have their own layout: codecs.cpp)
inline constexpr std::array<Field<ModelRecord>, 6> kModelRecordAttributes{{
    {"name", "", &ModelRecord::name},
    {"kind", "", &ModelRecord::kind},
    {"workload", "", &ModelRecord::workload},
    {"device", "", &ModelRecord::device},
    {"transfer_gate", "", &ModelRecord::transfer_gate, true},
    {"transfer_choice", "", &ModelRecord::transfer_choice, true},
}};

// ---------------------------------------------------------------------------------------------
// SweepResult
inline constexpr std::array<Field<SweepResult>, 9> kSweepResultAttributes{{
    {"name", "", &SweepResult::name},
    {"profile", "", &SweepResult::profile},
    {"relation", "", &SweepResult::relation},
    {"target", "", &SweepResult::target},
    {"feasibility", "", &SweepResult::feasibility},
    {"guard", "", &SweepResult::guard, true},    // added with the report's guard band
    {"budget", "", &SweepResult::budget, true},  // added with the proxy-budget sweeps
    {"proxy_cut", "", &SweepResult::proxy_cut, true},
    {"proxy_share", "", &SweepResult::proxy_share, true},
}};
inline constexpr std::array<Field<SweepRow>, 13> kSweepRowColumns{{
    {"cap", "W", &SweepRow::cap_w},
    {"workload", "", &SweepRow::workload},
    {"policy", "", &SweepRow::policy},
    {"feasible", "bool", &SweepRow::feasible},
    {"knob", kKnobUnit, &SweepRow::knob},  // a NaN row when infeasible
    {"batch_size", "samples", &SweepRow::batch_size},
    {"predicted_time", "s", &SweepRow::predicted_time_s},
    {"predicted_energy", "J", &SweepRow::predicted_energy_j},
    {"replayed_time_mean", "s", &SweepRow::replayed_time_mean_s},
    {"replayed_time_std", "s", &SweepRow::replayed_time_std_s},
    {"replayed_energy", "J", &SweepRow::replayed_energy_j},
    {"regret", "1", &SweepRow::regret},
    {"guard", "1", &SweepRow::guard, true},  // added with each workload's own guard
}};

// ---------------------------------------------------------------------------------------------
// PowerSeries (its columns may be empty or of the run's length: codecs.cpp)
inline constexpr std::array<Field<PowerSeries>, 4> kPowerSeriesAttributes{{
    {"name", "", &PowerSeries::name},
    {"emulated", "", &PowerSeries::emulated},
    {"cap_w", "", &PowerSeries::cap_w},
    {"failed_reads", "", &PowerSeries::failed_reads},
}};

// ---------------------------------------------------------------------------------------------
// ValidationResult
inline constexpr std::array<Field<ValidationResult>, 9> kValidationResultAttributes{{
    {"name", "", &ValidationResult::name},
    {"workload", "", &ValidationResult::workload},
    {"device", "", &ValidationResult::device},
    {"dataset", "", &ValidationResult::dataset},
    {"metric", "", &ValidationResult::metric},
    {"target", "", &ValidationResult::target},
    {"emulated", "", &ValidationResult::emulated},
    {"feasibility", "", &ValidationResult::feasibility},
    {"guard", "", &ValidationResult::guard, true},  // added with the report's guard band
}};
inline constexpr std::array<Field<ValidationRow>, 23> kValidationRowColumns{{
    {"cap", "W", &ValidationRow::cap_w},
    {"policy", "", &ValidationRow::policy},
    {"knob", kKnobUnit, &ValidationRow::knob},
    {"batch_size", "samples", &ValidationRow::batch_size},
    {"seed", "1", &ValidationRow::seed},
    {"reached", "bool", &ValidationRow::reached},
    {"samples", "samples", &ValidationRow::samples},
    {"device_time", "s", &ValidationRow::device_time_s},
    {"wall_time", "s", &ValidationRow::wall_time_s},
    {"energy", "J", &ValidationRow::energy_j},
    {"power_peak", "W", &ValidationRow::power_peak_w},
    {"power_mean", "W", &ValidationRow::power_mean_w},
    {"cap_exceeded", "bool", &ValidationRow::cap_exceeded},
    {"time_over_cap", "s", &ValidationRow::time_over_cap_s},
    {"predicted_time", "s", &ValidationRow::predicted_time_s},
    {"predicted_energy", "J", &ValidationRow::predicted_energy_j},
    {"final_metric", kMetricUnit, &ValidationRow::final_metric},
    {"series", "", &ValidationRow::series},
    {"status", "", &ValidationRow::status, true},            // added with the power watchdog
    {"node", "", &ValidationRow::node, true},                // added with board fleets (docs/cluster.md)
    {"board_model", "", &ValidationRow::board_model, true},  // added with board fleets
    {"threads", "1", &ValidationRow::threads, true},         // added with load-independent training
    {"probe", "", &ValidationRow::probe, true},              // added with probe before commit
}};

// ---------------------------------------------------------------------------------------------
// DeviceSpec (gpu_freqs and sources: codecs.cpp) and its three tables
inline constexpr std::array<Field<DeviceSpec>, 16> kDeviceSpecAttributes{{
    {"name", "", &DeviceSpec::name},
    {"display_name", "", &DeviceSpec::display_name},
    {"soc", "", &DeviceSpec::soc},
    {"gpu_arch", "", &DeviceSpec::gpu_arch},
    {"memory_bytes", "", &DeviceSpec::memory_bytes},
    {"devfreq_path", "", &DeviceSpec::devfreq_path},
    {"devfreq_node", "", &DeviceSpec::devfreq_node},
    {"gpu_device_dir", "", &DeviceSpec::gpu_device_dir},
    {"sensor_layout", "", &DeviceSpec::sensor_layout},
    {"sensor_driver", "", &DeviceSpec::sensor_driver},
    {"total_rail", "", &DeviceSpec::total_rail},
    {"gpu_rail", "", &DeviceSpec::gpu_rail},
    {"cuda_cores", "", &DeviceSpec::cuda_cores},
    {"mem_bandwidth_bytes_s", "", &DeviceSpec::mem_bandwidth_bytes_s},
    {"idle_power_w", "", &DeviceSpec::idle_power_w},
    {"max_power_w", "", &DeviceSpec::max_power_w},
}};
inline constexpr std::array<Field<PowerModeSpec>, 8> kPowerModeColumns{{
    {"id", "1", &PowerModeSpec::id},
    {"name", "", &PowerModeSpec::name},
    {"gpu_max_freq", "Hz", &PowerModeSpec::gpu_max_hz},
    {"cpu_cores", "1", &PowerModeSpec::cpu_cores},
    {"cpu_max_freq", "Hz", &PowerModeSpec::cpu_max_hz},
    {"mem_freq", "Hz", &PowerModeSpec::mem_hz},
    {"budget", "W", &PowerModeSpec::budget_w},
    {"gpu_tpcs", "1", &PowerModeSpec::gpu_tpcs, true},
}};
inline constexpr std::array<Field<RailSpec>, 4> kRailColumns{{
    {"chip", "", &RailSpec::chip},
    {"channel", "1", &RailSpec::channel},
    {"name", "", &RailSpec::name},
    {"role", "", &RailSpec::role},
}};
inline constexpr std::array<Field<VoltagePoint>, 2> kVoltageColumns{{
    {"freq", "Hz", &VoltagePoint::freq_hz},
    {"voltage", "V", &VoltagePoint::volt_v},
}};

// ---------------------------------------------------------------------------------------------
// Field-wise equality with NaN == NaN, for the records' operator==.
template <typename S, size_t N>
bool fields_equal(const std::array<Field<S>, N>& table, const S& a, const S& b) {
  for (const auto& f : table) {
    const bool eq = std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(a.*m)>;
          if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::vector<double>>)
            return same(a.*m, b.*m);
          else
            return a.*m == b.*m;
        },
        f.member);
    if (!eq) return false;
  }
  return true;
}

}  // namespace pacer::traces
