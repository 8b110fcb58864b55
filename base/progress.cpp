#include "base/progress.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include "base/units.hpp"

namespace pacer::base {

std::string progress_prefix(size_t done, size_t total, double elapsed_s) {
  const std::string elapsed = units::format(elapsed_s, units::Dimension::Time, 3);
  if (done == 0 || done >= total) return fmt::format("[{}/{}, {} elapsed]", done, total, elapsed);
  const double rest_s = elapsed_s / static_cast<double>(done) * static_cast<double>(total - done);
  return fmt::format("[{}/{}, {} elapsed, about {} left]", done, total, elapsed,
                     units::format(rest_s, units::Dimension::Time, 3));
}

std::string Progress::next() {
  ++done_;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return progress_prefix(done_, total_, elapsed);
}

void line_buffer_stdout() {
  // Line buffering of the C stream, and std::cout synchronised with it (the default), so every
  // '\n' written through either reaches the file or pipe at once.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  std::ios::sync_with_stdio(true);
}

}  // namespace pacer::base
