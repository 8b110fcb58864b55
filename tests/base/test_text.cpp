#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "base/text.hpp"
#include "base/units.hpp"

using namespace pacer;

// One notion of blank for every reader: the C locale's whitespace, on both ends only.
TEST(Text, TrimRemovesEveryBlankOnBothEndsAndNothingInside) {
  EXPECT_EQ(base::trim(" \t\r\n\v\f5000 W\r\n"), "5000 W");
  EXPECT_EQ(base::trim("a b"), "a b");
  EXPECT_EQ(base::trim(" \t\r\n"), "");
  EXPECT_EQ(base::trim(""), "");
  // A NUL (the end of of_node/name on a real board) is not a blank: SysfsIo strips it.
  EXPECT_EQ(base::trim(std::string("gpu\0", 4)), std::string("gpu\0", 4));
  EXPECT_FALSE(base::is_blank('\0'));
  EXPECT_FALSE(base::is_blank('_'));
}

// The number parser trims the same set: a value read from a CRLF file or a sysfs file is a number.
TEST(Text, TheNumberParserTrimsTheSameBlanks) {
  EXPECT_EQ(units::to_integer(" 5000\n"), 5000);
  EXPECT_EQ(units::to_number("\t2.5\r\n"), 2.5);
  EXPECT_FALSE(units::to_integer("5000abc"));
  EXPECT_FALSE(units::to_integer("50 00"));
}

// Issue 22 item 18: a UTF-8 byte-order mark is removed; a file of CR line ends is refused with
// what to do; CRLF is left to the readers (they trim CR).
TEST(Text, TextInputDropsAByteOrderMarkAndRefusesCrOnlyLineEnds) {
  EXPECT_EQ(base::text_input("\xEF\xBB\xBFpower-limit = 5W\n", "x.ini"), "power-limit = 5W\n");
  EXPECT_EQ(base::text_input("a,b\r\n1,2\r\n", "x.csv"), "a,b\r\n1,2\r\n");
  EXPECT_EQ(base::text_input("", "x.csv"), "");
  try {
    base::text_input("a,b\r1,2\r", "x.csv");
    FAIL() << "a CR-only file was accepted";
  } catch (const pacer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.csv uses CR line ends"), std::string::npos) << e.what();
  }
}

// Issue 22 item 20: bytes of a file printed to a terminal have their control characters escaped.
TEST(Text, PrintableEscapesControlCharacters) {
  EXPECT_EQ(base::printable("done on node3"), "done on node3");
  EXPECT_EQ(base::printable("a\x1b[31mb\r\x7f\\"), "a\\x1b[31mb\\x0d\\x7f\\\\");
}

// "Did you mean ...": the closest candidate within two edits (fewer for a short word), none on a tie.
TEST(Text, ClosestMatchSuggestsOneNearCandidate) {
  EXPECT_EQ(base::edit_distance("sweep", "swep"), 1u);
  EXPECT_EQ(base::edit_distance("", "abc"), 3u);
  EXPECT_EQ(base::edit_distance("calibrate", "calbirate"), 2u);
  const std::vector<std::string> commands{"select", "sweep", "simulate", "calibrate", "import", "import"};
  EXPECT_EQ(base::closest_match("swep", commands), "sweep");
  EXPECT_EQ(base::closest_match("calbirate", commands), "calibrate");
  EXPECT_EQ(base::closest_match("imprt", commands), "import");  // a name listed twice is not a tie
  EXPECT_EQ(base::closest_match("frobnicate", commands), "");
  EXPECT_EQ(base::closest_match("x", {"a", "b"}), "");  // one letter: no guess
  EXPECT_EQ(base::closest_match("--power-limt", {"--power-limit", "--power-limits"}), "--power-limit");
  EXPECT_EQ(base::closest_match("ab", {"ac", "ad"}), "");  // a tie
}

TEST(Text, CountNounIsSingularForOne) {
  EXPECT_EQ(base::count_noun(1, "window", "windows"), "1 window");
  EXPECT_EQ(base::count_noun(0, "window", "windows"), "0 windows");
  EXPECT_EQ(base::count_noun(3, "window", "windows"), "3 windows");
}
