// The seed mixing every random stream that must not depend on what ran before it is keyed by.
#include <gtest/gtest.h>

#include "base/hash.hpp"

namespace pacer::base {
namespace {

TEST(Hash, Mix64IsSplitmix64sFinaliser) {
  // splitmix64's first outputs from state 0 (its reference sequence: state += golden ratio, then mix).
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(mix64(0x9e3779b97f4a7c15ULL), 0x6e789e6aa1b965f4ULL);
}

TEST(Hash, TextHashKeepsTheValuesReplayOrdersAndRestoreStateNamesWereMadeWith) {
  EXPECT_EQ(text_hash(""), 1469598103934665603ULL);
  EXPECT_EQ(text_hash("a"), 4953267810257967366ULL);  // (offset ^ 'a') x FNV's 64-bit prime
  EXPECT_NE(text_hash("ab"), text_hash("ba"));
}

TEST(Hash, AStreamSeedDependsOnEveryInputAndOnNothingElse) {
  const uint64_t s = stream_seed(1, {921.6e6}, 32);
  EXPECT_EQ(stream_seed(1, {921.6e6}, 32), s);
  EXPECT_NE(stream_seed(2, {921.6e6}, 32), s);
  EXPECT_NE(stream_seed(1, {844.8e6}, 32), s);
  EXPECT_NE(stream_seed(1, {921.6e6}, 64), s);
  EXPECT_NE(stream_seed(1, {921.6e6, 0.0}, 32), s);  // a power mode's second dimension counts
  EXPECT_EQ(stream_seed(1, {-0.0}, 8), stream_seed(1, {0.0}, 8));
  // The order of a setting's values matters (a mode (a, b) is not (b, a)).
  EXPECT_NE(stream_seed(1, {1.0, 2.0}, 8), stream_seed(1, {2.0, 1.0}, 8));
}

}  // namespace
}  // namespace pacer::base
