#pragma once
// The one progress line of a long run (relation, validate, experiment): "[k/N, 1.5 min elapsed,
// about 4 min left]". The estimate is elapsed / k x (N - k): it is printed, never stored, so what a
// run records never depends on how fast the machine is. Progress goes to stderr through the log;
// base::line_buffer_stdout() makes stdout follow line by line when it is a file or a pipe.
#include <chrono>
#include <cstddef>
#include <string>

namespace pacer::base {

// "[k/N, <elapsed> elapsed, about <rest> left]" ("[N/N, <elapsed> elapsed]" at the end; no estimate
// before the first item ends).
std::string progress_prefix(size_t done, size_t total, double elapsed_s);

// Counts the items of a run from its start (steady clock): next() marks one more item done and
// returns its progress_prefix.
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  std::string next();
  size_t done() const { return done_; }
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
  size_t done_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// Makes std::cout flush at every line end it writes (std::cout is fully buffered on a file or a
// pipe): results and progress then appear as they happen, not at exit. Called once by the CLI.
void line_buffer_stdout();

}  // namespace pacer::base
