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

// Linear interpolation between the closest ranks (type 7): sorted 1 1 2 3 4 5 6 9, the 0.9-quantile
// sits at position 6.3, 30 % of the way from 6 to 9: 6.9, where the nearest rank would say 9.
TEST(Stats, QuantileInterpolatesBetweenTheClosestRanks) {
  const std::vector<double> v = {3, 1, 4, 1, 5, 9, 2, 6};
  EXPECT_DOUBLE_EQ(base::quantile(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(base::quantile(v, 0.05), 1);
  EXPECT_DOUBLE_EQ(base::quantile(v, 0.5), 3.5);
  EXPECT_DOUBLE_EQ(base::quantile(v, 0.9), 6.9);
  EXPECT_DOUBLE_EQ(base::quantile(v, 0.95), 7.95);
  EXPECT_DOUBLE_EQ(base::quantile(v, 1.0), 9);
  EXPECT_DOUBLE_EQ(base::quantile({NAN, 2, 1}, 0.5), 1.5);  // NaN left out
  EXPECT_TRUE(std::isnan(base::quantile({}, 0.5)));
  EXPECT_TRUE(std::isnan(base::quantile({NAN}, 0.5)));
}

// The median is the middle value, or (a + b) / 2 of the two middle ones, computed as such: for
// 1.73 and 6.27 that is exactly 4, where a + (b - a) / 2, the quantile's form, gives 3.9999999999999996.
TEST(Stats, MedianIsTheMiddleValueOrTheMeanOfTheTwoMiddleOnes) {
  EXPECT_DOUBLE_EQ(base::median({5, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(base::median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(base::median({6.27, 1.73}), 4.0);
  EXPECT_DOUBLE_EQ(base::median({NAN, 7}), 7);
  EXPECT_TRUE(std::isnan(base::median({})));
}

// Energy is power x time with the mean power when it was measured, else the peak (an upper bound).
TEST(Stats, EnergyPowerIsTheMeanWhenMeasuredElseThePeak) {
  EXPECT_EQ(base::energy_power_w(4.5, 6.0), 4.5);
  EXPECT_EQ(base::energy_power_w(NAN, 6.0), 6.0);
  EXPECT_TRUE(std::isnan(base::energy_power_w(NAN, NAN)));
}

TEST(Stats, GeometricMeanIsTheExpOfTheMeanLog) {
  EXPECT_DOUBLE_EQ(base::geometric_mean({2, 8}), 4);             // the arithmetic mean would be 5
  EXPECT_NEAR(base::geometric_mean({0.41, 0.50}), 0.4528, 1e-4);  // the sigma scale's two boards
  EXPECT_TRUE(std::isnan(base::geometric_mean({})));
}
