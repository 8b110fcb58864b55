#include "hw/jetson/tegrastats_power.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/error.hpp"
#include "base/process.hpp"
#include "traces/catalog/rails.hpp"
#include "traces/import/tegrastats.hpp"

namespace pacer::hw {

struct TegrastatsPower::State {
  std::mutex mu;
  std::condition_variable cv;
  std::unique_ptr<base::ChildProcess> child;
  std::thread thread;
  std::string program;
  long pid = -1;
  uint64_t lines = 0;  // lines seen so far (valid or not)
  bool line_ok = false;
  PowerReading last;
  std::string last_error;
  // What the first line held: the constructor judges the program by it, and a slow start (a loaded
  // machine, qemu) may let later lines arrive before it looks.
  bool first_ok = false;
  std::string first_error;
  bool ended = false;  // the process closed its output (exited)
  std::string end_reason;
  bool closed = false;  // pacer stopped it
  std::vector<std::string> rails;

  void run();
  PowerReading next(uint64_t& seen);
  void stop();
  uint64_t lines_now() {
    std::lock_guard lock(mu);
    return lines;
  }
};

namespace {

// The module power of a parsed line, and its GPU rail when the board has one.
PowerReading reading_of(const traces::tegrastats::Sample& s, std::vector<std::string>* rails) {
  PowerReading r;
  r.total_w = s.module_power_w;
  std::string gpu;
  for (const auto& [name, w] : s.rails_w)
    if (traces::is_gpu_rail(name) && gpu.empty()) {
      gpu = name;
      r.gpu_w = w;
    }
  if (rails) {
    rails->clear();
    for (const auto& [name, w] : s.rails_w)
      if (!traces::is_nc_rail(name) && (s.summed || traces::is_total_rail(name)))
        rails->push_back("tegrastats:" + name);
    if (!gpu.empty()) rails->push_back("gpu:" + gpu);
  }
  return r;
}

}  // namespace

void TegrastatsPower::State::run() {
  size_t line_no = 0;
  for (;;) {
    std::string line;
    bool timed_out = false;
    const bool got = child->read_line(line, 0.2, &timed_out);
    std::unique_lock lock(mu);
    if (closed) return;
    if (!got && timed_out) continue;
    if (!got) {
      lock.unlock();
      int status = -1;
      for (int i = 0; i < 200 && !child->exited(&status); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      lock.lock();
      ended = true;
      end_reason = child->exited(&status) ? fmt::format("exited with status {}", status) : "closed its output";
      cv.notify_all();
      return;
    }
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const auto s = traces::tegrastats::parse_line(line, program, line_no);
      if (!std::isfinite(s.module_power_w))
        throw Error(fmt::format("{}:{}: no module power on the line", program, line_no));
      last = reading_of(s, rails.empty() ? &rails : nullptr);
      line_ok = true;
    } catch (const Error& e) {
      line_ok = false;
      last_error = e.what();
    }
    if (lines == 0) {
      first_ok = line_ok;
      first_error = line_ok ? "" : last_error;
    }
    ++lines;
    cv.notify_all();
  }
}

PowerReading TegrastatsPower::State::next(uint64_t& seen) {
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return lines > seen || ended || closed; });
  if (lines > seen) {
    seen = lines;
    if (line_ok) return last;
    throw SensorError(fmt::format("tegrastats (pid {}) printed a line pacer cannot read: {}", pid, last_error),
                      SensorFault::garbage);
  }
  if (closed) throw SensorError(fmt::format("tegrastats (pid {}) was stopped", pid), SensorFault::read_error);
  throw SensorError(fmt::format("tegrastats (pid {}) {}: no more power readings", pid, end_reason),
                    SensorFault::missing);
}

TegrastatsPower::TegrastatsPower(TegrastatsOptions o) : state_(std::make_shared<State>()) {
  if (!(o.interval_s > 0)) throw OptionError("tegrastats-interval", "the interval must be positive");
  const long ms = std::max(1L, std::lround(o.interval_s * 1000));
  State& s = *state_;
  s.program = o.binary.string();
  s.child = std::make_unique<base::ChildProcess>(o.binary, std::vector<std::string>{"--interval", std::to_string(ms)});
  s.pid = s.child->pid();
  s.thread = std::thread([st = state_] { st->run(); });
  std::unique_lock lock(s.mu);
  const bool first =
      s.cv.wait_for(lock, std::chrono::duration<double>(o.start_timeout_s), [&] { return s.lines > 0 || s.ended; });
  std::string why;
  if (s.lines > 0 && !s.first_ok)
    why = fmt::format("its first line cannot be read: {}", s.first_error);
  else if (s.ended)
    why = s.end_reason + " before printing a line";
  else if (!first)
    why = fmt::format("printed nothing within {:g} s", o.start_timeout_s);
  lock.unlock();
  if (!why.empty()) {
    s.stop();
    throw Error(
        fmt::format("tegrastats {} (pid {}) {}: check that the program is tegrastats and runs with an interval "
                    "in ms, or read the board's sysfs sensor instead",
                    s.program, s.pid, why));
  }
  seen_ = s.lines_now();
}

void TegrastatsPower::State::stop() {
  {
    std::lock_guard lock(mu);
    if (closed) return;
    closed = true;
  }
  cv.notify_all();
  if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGTERM);  // by pid, never by name
  if (thread.joinable()) thread.join();
  child->stop();
}

TegrastatsPower::~TegrastatsPower() {
  state_->stop();
}

PowerReading TegrastatsPower::read() {
  return state_->next(seen_);
}

std::function<PowerReading()> TegrastatsPower::reader() {
  return [st = state_, seen = std::make_shared<uint64_t>(state_->lines_now())]() { return st->next(*seen); };
}

std::vector<std::string> TegrastatsPower::rails() const {
  std::lock_guard lock(state_->mu);
  return state_->rails;
}

long TegrastatsPower::pid() const {
  return state_->pid;
}

TegrastatsPowerDevice::TegrastatsPowerDevice(std::unique_ptr<Device> inner, TegrastatsOptions options)
    : inner_(std::move(inner)), power_(std::move(options)) {}

}  // namespace pacer::hw
