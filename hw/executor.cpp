#include "hw/executor.hpp"

#include "base/error.hpp"
#include "hw/emulator/emulated.hpp"

namespace pacer::hw {

double BatchExecutor::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void VirtualExecutor::run_batch() {
  if (batch_size_ <= 0) throw Error("VirtualExecutor::run_batch before prepare(batch_size)");
  device_.run_batch(batch_size_);
}

FunctionExecutor::FunctionExecutor(Hooks hooks) : hooks_(std::move(hooks)) {
  if (!hooks_.step) throw Error("a training executor needs a step function");
}

}  // namespace pacer::hw
