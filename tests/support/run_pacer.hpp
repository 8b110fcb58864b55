#pragma once
// Test support: run the built `pacer` binary (PACER_BINARY, set by pacer_test_suite) as a user
// would, capturing its exit code, stdout and stderr; and small fixture data the tests write.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace pacer::testing {

struct RunResult {
  int code = -1;    // exit status; -1 when killed by a signal
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `pacer ARGS` with stdin from /dev/null; stdout and stderr go through files in `scratch`;
// `env` ("NAME=value ...") is added to its environment.
inline RunResult run_pacer(const std::string& args, const std::filesystem::path& scratch, const std::string& env = "") {
  const auto tag = std::to_string(::getpid());
  const auto out = scratch / ("pacer-out-" + tag), err = scratch / ("pacer-err-" + tag);
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(PACER_BINARY) + " " + args + " >" +
                          out.string() + " 2>" + err.string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  RunResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  std::error_code ec;
  std::filesystem::remove(out, ec);
  std::filesystem::remove(err, ec);
  return r;
}

// A small IDX dataset (train-images/labels-idx*-ubyte) in `dir`: four classes, a bright square in
// one quadrant of a noisy 12x12 image. `seed` varies the noise; a square of `brightness` in noise of
// up to `noise` (at most 255 together) makes a task as hard as one likes.
inline void write_quadrant_idx(const std::filesystem::path& dir, int n, uint32_t seed = 7, int brightness = 160,
                               int noise = 90) {
  auto put32 = [](std::ofstream& o, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) o.put(static_cast<char>(v >> s));
  };
  std::ofstream img(dir / "train-images-idx3-ubyte", std::ios::binary);
  std::ofstream lab(dir / "train-labels-idx1-ubyte", std::ios::binary);
  put32(img, 0x803), put32(img, n), put32(img, 12), put32(img, 12);
  put32(lab, 0x801), put32(lab, n);
  uint32_t state = seed;
  for (int i = 0; i < n; ++i) {
    const int cls = i % 4;
    lab.put(static_cast<char>(cls));
    for (int y = 0; y < 12; ++y)
      for (int x = 0; x < 12; ++x) {
        state = state * 1103515245u + 12345u;
        const bool in = (y / 6) * 2 + (x / 6) == cls && y % 6 >= 1 && y % 6 < 5 && x % 6 >= 1 && x % 6 < 5;
        img.put(static_cast<char>((in ? brightness : 0) + static_cast<int>((state >> 16) % noise)));
      }
  }
}

}  // namespace pacer::testing
