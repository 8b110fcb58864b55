#pragma once
// Jetson power modes (nvpmodel) as a knob: the one home of a mode's caps as knob values, of the
// knob space a board's modes span, and of the nvpmodel.conf format (POWER_MODEL sections). The
// catalog lists each board's modes (traces/catalog/devices/*.ini, [mode-N]); a board's own conf file gives
// them on the board; importers, the profiler and the models all read caps through this file.
//
// A mode's knob is its caps: {cpu_cores, cpu_freq [Hz], gpu_freq [Hz], mem_freq [Hz]} and, on a
// board whose modes power-gate GPU TPCs (AGX Orin), gpu_tpcs. Under a mode the clocks are not
// pinned: each governor runs at most at its cap (docs/hardware.md, "Power modes").
#include <string>
#include <vector>

#include "traces/records.hpp"

namespace pacer::traces {

// What floats while measuring (ProfileTable::floating_clocks): under a power mode every clock
// follows its governor below the mode's caps; with the GPU clock pinned, CPU and EMC still do.
inline constexpr const char* kModeFloatingClocks = "gpu, cpu, emc (each under the mode's cap)";
inline constexpr const char* kGpuPinnedFloatingClocks = "cpu, emc";

// The caps one mode allows, in SI units; 0 where unknown.
struct ModeCaps {
  int cpu_cores = 0;
  double cpu_freq_hz = 0;
  double gpu_freq_hz = 0;
  double mem_freq_hz = 0;
  int gpu_tpcs = 0;  // GPU TPCs left powered by the mode; 0: not gated / unknown
};

// KnobSpace::power_mode() plus a gpu_tpcs dimension when any mode of `device` names its TPC count.
KnobSpace power_mode_knob(const DeviceSpec& device);
// The same knob from its number of dimensions (4, or 5 with gpu_tpcs), as records store it.
KnobSpace power_mode_knob(size_t dims);

// The highest cap of each kind over the device's modes (the board's maxima as far as the catalog
// knows them; MAXN on every Jetson).
ModeCaps mode_maxima(const DeviceSpec& device);

// A mode's caps with unknown values filled from the device maxima (a mode that does not cap the
// CPUs runs them at the board's maximum). Throws Error naming the mode and the device when a cap is
// unknown there too: the knob needs every value.
ModeCaps resolved_caps(const PowerModeSpec& mode, const DeviceSpec& device);

// The knob values of caps in `space` (dims by name).
std::vector<double> caps_knob(const ModeCaps& caps, const KnobSpace& space);
// Caps read back from knob values by dimension name (gpu_tpcs 0 when the space has none).
ModeCaps knob_caps(const KnobSpace& space, const std::vector<double>& knob);

// The knob of a mode of `device`: caps_knob(resolved_caps(mode, device), power_mode_knob(device)).
std::vector<double> mode_knob(const PowerModeSpec& mode, const DeviceSpec& device);

// Every mode of the device as a knob setting, in catalog order. Throws Error for a device without
// modes (naming the device file's [mode-N] sections).
std::vector<std::vector<double>> mode_settings(const DeviceSpec& device);

// The mode whose knob equals `knob` (relative tolerance 1e-6), nullptr when none does.
const PowerModeSpec* find_mode(const DeviceSpec& device, const std::vector<double>& knob);
// The mode with this nvpmodel id, nullptr when none.
const PowerModeSpec* find_mode_id(const DeviceSpec& device, int id);

// "2 MODE_30W" style label of the mode at `knob`, or the knob formatted when it is no mode.
std::string mode_label(const DeviceSpec& device, const std::vector<double>& knob);

// The POWER_MODEL sections of an nvpmodel.conf as modes in SI units. "-1" (no cap) and an EMC cap of
// 0 resolve to the device catalog's value for that mode, else the device maximum (0 when unknown); a
// GPU cap between table entries (Nano 5W: 640 MHz) snaps down to the table entry the governor can
// reach; TPC_PG_MASK (gated TPCs as bits) gives gpu_tpcs against the catalog's highest TPC count.
// Throws Error "<origin>:<line>: ..." on a malformed section or value.
std::vector<PowerModeSpec> parse_nvpmodel(const std::string& text, const DeviceSpec& device, const std::string& origin);

}  // namespace pacer::traces
