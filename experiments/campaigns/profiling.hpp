#pragma once
// `pacer profile` as one library call: open the device, pick what runs the mini-batches (the
// emulator's virtual clock, a served tree's sleeping workload, or real training steps on a board)
// and run the profiler into the trace store.
#include <functional>
#include <string>
#include <vector>

#include "hw/open_device.hpp"
#include "hw/profiler.hpp"

namespace pacer::experiments {

struct ProfileRequest {
  hw::DeviceRequest device;
  hw::ProfileOptions profile;         // profile.device_spec and profile.source are filled in here
  std::string train_device = "auto";  // real steps on: "auto" (cuda when libtorch sees one) | "cpu" | "cuda[:N]"
  int threads = 0;                    // CPU intra-op threads of real steps, 0: libtorch's default
  // With device.knob power_mode: the nvpmodel ids to profile (empty: every mode of the board).
  std::vector<int> mode_ids;
};

struct ProfileRun {
  hw::ProfileReport report;
  std::string device_name;
  bool emulated = false;           // the device is emulated (its results are labelled)
  std::string executor_kind;       // what ran the mini-batches
  std::string time_basis;          // "virtual time" | "device time, scaled" | "wall time"
  std::vector<std::string> rails;  // power rails behind the figures
};

// `on_point` gets one line per measured point: "[3/36] gpu_freq=921.6 MHz b=8 t=... ".
ProfileRun run_profile(const ProfileRequest& request, const std::function<void(const std::string&)>& on_point = {});

// The measured points as a text table; the knob column is formatted by the knob's own kind
// (921.6 MHz, 250 W, ...).
std::string format_profile_points(const traces::ProfileTable& table);

// One progress line of a measured point.
std::string format_profile_point(const traces::KnobSpace& knob, const traces::ProfilePoint& point);

}  // namespace pacer::experiments
