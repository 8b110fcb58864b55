#pragma once
// The libtorch line of `pacer doctor`: defined (cmd_doctor_torch.cpp) only in the program that links
// libtorch (pacer-train). The light front, where it is not linked, asks pacer-train for the line.
#include "hw/jetson/doctor.hpp"

namespace pacer::cli {

// Null (weak, undefined) in the light front.
hw::TorchInfo linked_torch_info() __attribute__((weak));

}  // namespace pacer::cli
