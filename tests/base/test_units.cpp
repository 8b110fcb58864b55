#include <gtest/gtest.h>

#include <cmath>

#include "base/error.hpp"
#include "base/units.hpp"

using namespace pacer;
using units::Dimension;

TEST(Units, ParsesEveryPrefixIntoSI) {
  EXPECT_DOUBLE_EQ(units::parse("7.5W", Dimension::Power, "W", "--p"), 7.5);
  EXPECT_DOUBLE_EQ(units::parse("7500mW", Dimension::Power, "W", "--p"), 7.5);
  EXPECT_DOUBLE_EQ(units::parse("0.0075 kW", Dimension::Power, "W", "--p"), 7.5);
  EXPECT_DOUBLE_EQ(units::parse("921.6MHz", Dimension::Frequency, "MHz", "--f"), 921.6e6);
  EXPECT_DOUBLE_EQ(units::parse("1.3GHz", Dimension::Frequency, "MHz", "--f"), 1.3e9);
  EXPECT_DOUBLE_EQ(units::parse("76800kHz", Dimension::Frequency, "MHz", "--f"), 76.8e6);
  EXPECT_DOUBLE_EQ(units::parse("30s", Dimension::Time, "s", "--t"), 30);
  EXPECT_DOUBLE_EQ(units::parse("250ms", Dimension::Time, "s", "--t"), 0.25);
  EXPECT_DOUBLE_EQ(units::parse("2min", Dimension::Time, "s", "--t"), 120);
  EXPECT_DOUBLE_EQ(units::parse("1.5h", Dimension::Time, "s", "--t"), 5400);
  EXPECT_DOUBLE_EQ(units::parse("20us", Dimension::Time, "s", "--t"), 20e-6);
  EXPECT_DOUBLE_EQ(units::parse("2Wh", Dimension::Energy, "J", "--e"), 7200);
  EXPECT_DOUBLE_EQ(units::parse("3kJ", Dimension::Energy, "J", "--e"), 3000);
}

TEST(Units, BareNumberTakesTheDocumentedUnit) {
  EXPECT_DOUBLE_EQ(units::parse("921.6", Dimension::Frequency, "MHz", "--f"), 921.6e6);
  EXPECT_DOUBLE_EQ(units::parse("10", Dimension::Power, "W", "--p"), 10);
  EXPECT_DOUBLE_EQ(units::parse("10", Dimension::Power, "mW", "--p"), 0.01);
}

// A unit in other letter case is read where it can mean one unit only; an upper-case M never
// stands for milli ("5MW" is mega, not offered; "5mw" is milli).
TEST(Units, LetterCaseIsForgivenWhereItIsUnambiguous) {
  EXPECT_DOUBLE_EQ(units::parse("7w", Dimension::Power, "W", "--p"), 7);
  EXPECT_DOUBLE_EQ(units::parse("7 W", Dimension::Power, "W", "--p"), 7);
  EXPECT_DOUBLE_EQ(units::parse("500mw", Dimension::Power, "W", "--p"), 0.5);
  EXPECT_DOUBLE_EQ(units::parse("2KW", Dimension::Power, "W", "--p"), 2000);
  EXPECT_DOUBLE_EQ(units::parse("921.6mhz", Dimension::Frequency, "MHz", "--f"), 921.6e6);
  EXPECT_DOUBLE_EQ(units::parse("1.2ghz", Dimension::Frequency, "MHz", "--f"), 1.2e9);
  EXPECT_DOUBLE_EQ(units::parse("10S", Dimension::Time, "s", "--t"), 10);
  EXPECT_DOUBLE_EQ(units::parse("2wh", Dimension::Energy, "J", "--e"), 7200);
  EXPECT_THROW(units::parse("5MW", Dimension::Power, "W", "--p"), UsageError);   // mega is not milli
  EXPECT_THROW(units::parse("5MJ", Dimension::Energy, "J", "--e"), UsageError);
  EXPECT_THROW(units::parse("5MS", Dimension::Time, "s", "--t"), UsageError);
}

TEST(Units, RejectsBadValuesNamingTheOption) {
  for (const char* bad : {"", "abc", "-5W", "nan", "inf", "5 parsecs", "5MW", "W"}) {
    try {
      units::parse(bad, Dimension::Power, "W", "--power-limit");
      FAIL() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--power-limit"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(units::parse("5Hz", Dimension::Power, "W", "--p"), UsageError);  // wrong dimension
  EXPECT_THROW(units::parse("5W", Dimension::Time, "s", "--t"), UsageError);
}

TEST(Units, ListsAndRanges) {
  const auto r = units::parse_list("2W:10W:0.5W", Dimension::Power, "W", "--caps");
  ASSERT_EQ(r.size(), 17u);
  EXPECT_DOUBLE_EQ(r.front(), 2);
  EXPECT_DOUBLE_EQ(r[1], 2.5);
  EXPECT_DOUBLE_EQ(r.back(), 10);
  const auto l = units::parse_list("5W,7500mW,10", Dimension::Power, "W", "--caps");
  ASSERT_EQ(l.size(), 3u);
  EXPECT_DOUBLE_EQ(l[1], 7.5);
  EXPECT_DOUBLE_EQ(l[2], 10);
  EXPECT_THROW(units::parse_list("10W:2W:1W", Dimension::Power, "W", "--caps"), UsageError);
  EXPECT_THROW(units::parse_list("2W:10W:0W", Dimension::Power, "W", "--caps"), UsageError);
  EXPECT_THROW(units::parse_list("2W:10W", Dimension::Power, "W", "--caps"), UsageError);
  EXPECT_THROW(units::parse_list("5W,,6W", Dimension::Power, "W", "--caps"), UsageError);
}

TEST(Units, FormatsWithPrefixes) {
  EXPECT_EQ(units::format(921.6e6, Dimension::Frequency), "921.6 MHz");
  EXPECT_EQ(units::format(7.5, Dimension::Power), "7.5 W");
  EXPECT_EQ(units::format(0.25, Dimension::Time), "250 ms");
  EXPECT_EQ(units::format(300, Dimension::Time), "5 min");
}

// The one number parser: the whole text, finite, within bounds; nothing else, so that no error is
// the C++ library's bare "stoi".
TEST(Units, NumberParserTakesTheWholeTextAndNothingOutOfRange) {
  EXPECT_EQ(units::to_number(" 12.5 "), 12.5);
  EXPECT_EQ(units::to_number("+3"), 3.0);
  EXPECT_EQ(units::to_number("-0.25"), -0.25);
  EXPECT_EQ(units::to_number("1e3"), 1000.0);
  for (const char* bad : {"", " ", "12abc", "abc", "1e400", "nan", "inf", "+-5", "0x10", "5,0"})
    EXPECT_FALSE(units::to_number(bad)) << bad;
  EXPECT_EQ(units::to_integer("42"), 42);
  EXPECT_EQ(units::to_integer("-7", -10, 10), -7);
  EXPECT_FALSE(units::to_integer("11", -10, 10));
  EXPECT_FALSE(units::to_integer("99999999999999999999"));
  EXPECT_FALSE(units::to_integer("4.0"));
  EXPECT_FALSE(units::to_integer("+-1"));
}

// `-P none` (issue 24): a cap may be "none" (or "uncapped"), no cap at all, the paper's N/A column;
// a list of caps may name it among powers. Anything else is still a power.
TEST(Units, ACapMayBeNone) {
  using namespace pacer::units;
  EXPECT_TRUE(std::isinf(parse_cap("none", "--power-limit")));
  EXPECT_TRUE(std::isinf(parse_cap(" Uncapped ", "--power-limit")));
  EXPECT_TRUE(is_no_cap(parse_cap("NONE", "--power-limit")));
  EXPECT_DOUBLE_EQ(parse_cap("7.5W", "--power-limit"), 7.5);
  EXPECT_DOUBLE_EQ(parse_cap("7500mW", "--power-limit"), 7.5);
  EXPECT_FALSE(is_no_cap(7.5));
  const auto caps = parse_cap_list("5W,none,7W", "--power-limits");
  ASSERT_EQ(caps.size(), 3u);
  EXPECT_DOUBLE_EQ(caps[0], 5);
  EXPECT_TRUE(std::isinf(caps[1]));
  EXPECT_DOUBLE_EQ(caps[2], 7);
  EXPECT_EQ(parse_cap_list("5W:7W:1W", "--power-limits"), (std::vector<double>{5, 6, 7}));
  EXPECT_THROW(parse_cap("nothing", "--power-limit"), pacer::UsageError);
  EXPECT_THROW(parse_cap("inf", "--power-limit"), pacer::UsageError);
  EXPECT_THROW(parse_cap_list("5W,,none", "--power-limits"), pacer::UsageError);
  EXPECT_EQ(format_cap(kNoCap), "none");
}
