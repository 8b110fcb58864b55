#pragma once
// The roles of Jetson power rails by name, one home for the sysfs backend (hw/jetson/jetson_sysfs) and the
// tegrastats importer: which rail is the module total, which is the GPU's, which is unconnected.
// Where a board has no total rail (AGX Xavier, AGX Orin) the module power is the sum of its rails.
#include <string>
#include <vector>

namespace pacer::traces {

// "VDD_CPU_GPU_CV" -> {"VDD", "CPU", "GPU", "CV"}: upper-cased parts split at '_', '-' and ' '.
std::vector<std::string> name_tokens(const std::string& name);

// POM_5V_IN (Nano, TX1) and VDD_IN (TX2, Xavier NX, Orin NX/Nano) measure the module input.
bool is_total_rail(const std::string& name);
// A GPU-only rail: a GPU token without a CPU token (VDD_CPU_GPU_CV is shared, not the GPU's).
bool is_gpu_rail(const std::string& name);
// An unconnected INA3221 channel ("NC") or an unnamed one.
bool is_nc_rail(const std::string& name);

}  // namespace pacer::traces
