// The one JSON writer (base/json): escaping, numbers, null for what is not finite.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/json.hpp"
#include "base/progress.hpp"

using namespace pacer;

TEST(Json, StringsAreEscaped) {
  EXPECT_EQ(base::json_string("a\"b\\c\nd\te"), "\"a\\\"b\\\\c\\nd\\te\"");
  EXPECT_EQ(base::json_string(std::string("\x01", 1)), "\"\\u0001\"");
  EXPECT_EQ(base::json_string("µs"), "\"µs\"");  // UTF-8 passes through
}

TEST(Json, NumbersAreFiniteOrNull) {
  EXPECT_EQ(base::json_number(7.5), "7.5");
  EXPECT_EQ(base::json_number(921.6e6), "921600000");
  EXPECT_EQ(base::json_number(0.1234567890123), "0.1234567890123");
  // Every double reads back as itself: a power printed by --json and given back as a cap is the same.
  for (const double v : {6.321985415312345, 0.1 + 0.2, 1e-7 / 3, 123456.789012345678, -2.5e20 / 7}) {
    const std::string text = base::json_number(v);
    EXPECT_EQ(std::stod(text), v) << text;
  }
  EXPECT_EQ(base::json_number(std::nan("")), "null");
  EXPECT_EQ(base::json_number(std::numeric_limits<double>::infinity()), "null");
}

TEST(Json, ObjectKeepsTheOrderOfItsFields) {
  base::JsonObject o;
  o.add("cap_w", 7.5).add("policy", "ours").add("feasible", true).add("batch_size", 32).add("knob", std::vector<double>{1, 2});
  EXPECT_EQ(o.str(), R"({"cap_w":7.5,"policy":"ours","feasible":true,"batch_size":32,"knob":[1,2]})");
  EXPECT_EQ(base::JsonObject().str(), "{}");
}

// The progress line's estimate is elapsed / done x remaining; none before the first item or at the end.
TEST(Progress, EstimatesTheRestFromTheItemsDone) {
  EXPECT_EQ(base::progress_prefix(1, 4, 30), "[1/4, 30 s elapsed, about 90 s left]");
  EXPECT_EQ(base::progress_prefix(0, 4, 0), "[0/4, 0 s elapsed]");
  EXPECT_EQ(base::progress_prefix(4, 4, 600), "[4/4, 10 min elapsed]");
  EXPECT_EQ(base::progress_prefix(6, 15, 119.6), "[6/15, 120 s elapsed, about 2.99 min left]");  // never "1.2e+02 s"
}
