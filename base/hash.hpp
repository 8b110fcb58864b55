#pragma once
// The one home of the seed mixing every layer uses where a random stream must depend on what it is
// for (a replay order per workload and batch size, an emulated point's noise per setting and batch
// size) and not on what ran before it.
#include <bit>
#include <cstdint>
#include <string_view>
#include <vector>

namespace pacer::base {

// splitmix64's finaliser: a bijection of 64-bit words whose outputs look independent for nearby inputs.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A hash of a text (a workload's name, a sysfs root): FNV-1a's step and prime from an offset one
// digit short of FNV's standard basis (14695981039346656037), as pacer always had it; kept, since the
// Zeus replay orders and the names of restore-state files already written depend on it.
inline uint64_t text_hash(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

// A seed for the stream of (seed, values..., n): equal inputs give equal seeds, bit for bit.
inline uint64_t stream_seed(uint64_t seed, const std::vector<double>& values, int64_t n) {
  uint64_t h = mix64(seed);
  for (double v : values) h = mix64(h ^ std::bit_cast<uint64_t>(v + 0.0));  // + 0.0: -0 and 0 alike
  return mix64(h ^ static_cast<uint64_t>(n));
}

}  // namespace pacer::base
