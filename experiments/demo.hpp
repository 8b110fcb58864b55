#pragma once
// `pacer demo`: the whole pipeline from nothing on the embedded default (an emulated Jetson Nano,
// a small CNN pre-trained on Fashion-MNIST): pre-train -> profile -> calibrate -> proxy relation ->
// validate (real training; the oracle from the target's own relation) -> sweep -> tables and plots.
#include <filesystem>
#include <string>

namespace pacer::experiments {

struct DemoOptions {
  bool quick = false;                      // fewer batch sizes, seeds and caps: under 2 minutes
  std::filesystem::path out_dir = "pacer-out/demo";
  std::string device = "jetson-nano";      // catalog device, emulated
  std::string workload = "cnn";
  int threads = 2;                         // CPU intra-op threads of the training
};

// Prints progress on stderr and the verdict on stdout; returns the process exit code.
int run_demo(const DemoOptions& options);

}  // namespace pacer::experiments
