#pragma once
// Shared by the fuzz targets: an invariant that fails aborts, so libFuzzer records the input.
#include <cstdio>
#include <cstdlib>

#define PACER_FUZZ_CHECK(cond)                                                          \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)
