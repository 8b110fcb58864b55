#pragma once
// Power modes on an emulated Jetson's sysfs tree: the files nvpmodel writes on a board (CPU online
// and cpufreq maxima, the GPU devfreq range, the EMC cap, the GPU TPC power-gating mask), read back
// as the caps in force, and a stand-in `nvpmodel` script that writes them, so the real power-mode
// backend (hw/jetson/power_mode_device.hpp) runs against an emulated tree unchanged. Paths are those of the
// boards' nvpmodel.conf files (data/jetson/loudva/nvpmodel, NVIDIA nvpmodel_p3701_0000.conf).
#include <filesystem>

#include "traces/catalog/power_modes.hpp"
#include "traces/records.hpp"

namespace pacer::hw {

// Whether every mode of the device resolves to complete caps (the emulated tree serves modes then).
bool has_complete_modes(const traces::DeviceSpec& device);

// What `nvpmodel -m` writes for `caps`: cpuN/online (N below the board's core count), each online
// CPU's cpufreq scaling_max_freq [kHz] (and cpuinfo_max_freq, the board's maximum), the GPU
// devfreq min_freq (lowest entry) then max_freq (highest entry at or below the cap), the EMC cap
// sys/kernel/nvpmodel_emc_cap/emc_iso_cap [Hz] and, on a board with TPC gating, the GPU's tpc_pg_mask.
// `gpu_range` false leaves the GPU devfreq range alone (a tree at boot keeps its own range).
void write_mode_files(const std::filesystem::path& root, const traces::DeviceSpec& device, const traces::ModeCaps& caps,
                      bool gpu_range = true);

// The caps the files under `root` put in force (what the kernel enforces on a board); 0 where a
// file is absent or unreadable.
traces::ModeCaps read_mode_files(const std::filesystem::path& root, const traces::DeviceSpec& device);

// Writes <root>/pacer-emulator/nvpmodel, a POSIX sh script answering `-q` ("NV Power Mode: NAME" and
// the id) and `-m ID` (write_mode_files for that mode, by plain file writes) for the device's modes,
// with the mode in force in <root>/pacer-emulator/nvpmodel_mode (the first mode at start). Returns
// its path.
std::filesystem::path write_fake_nvpmodel(const std::filesystem::path& root, const traces::DeviceSpec& device);

}  // namespace pacer::hw
