#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.hpp"
#include "base/stats.hpp"

using namespace pacer;

// Four points off any line: the least-squares slope (1.4) is neither the end points' (5/3) nor
// that of any two neighbours, and the intercept follows from the means.
TEST(Stats, LeastSquaresLineThroughScatteredPoints) {
  const base::Line line = base::least_squares_line({0, 1, 2, 3}, {1, 3, 2, 6});
  EXPECT_FALSE(line.constant);
  EXPECT_NEAR(line.slope, 1.4, 1e-12);
  EXPECT_NEAR(line.intercept, 0.9, 1e-12);
  EXPECT_NEAR(line.at(10), 14.9, 1e-12);
}

TEST(Stats, LeastSquaresLineRecoversAnExactLine) {
  std::vector<double> x, y;
  for (int b = 16; b <= 4096; b *= 2) {
    x.push_back(std::log(b));
    y.push_back(-0.25 + 0.125 * std::log(b));
  }
  const base::Line line = base::least_squares_line(x, y);
  EXPECT_NEAR(line.slope, 0.125, 1e-12);
  EXPECT_NEAR(line.intercept, -0.25, 1e-12);
}

// One distinct x (rounding of log 4096 repeated included): no slope, the mean of y.
TEST(Stats, LeastSquaresLineOfOneXIsTheMean) {
  const double x = std::log(4096.0);
  const base::Line line = base::least_squares_line({x, x, x}, {1, 2, 6});
  EXPECT_TRUE(line.constant);
  EXPECT_EQ(line.slope, 0.0);
  EXPECT_NEAR(line.intercept, 3.0, 1e-12);
  EXPECT_NEAR(line.at(0.5), 3.0, 1e-12);
}

TEST(Stats, LeastSquaresLineOfNothing) {
  const base::Line none = base::least_squares_line({}, {});
  EXPECT_TRUE(none.constant);
  EXPECT_TRUE(std::isnan(none.intercept));
  EXPECT_THROW(base::least_squares_line({1, 2}, {1}), Error);
}
