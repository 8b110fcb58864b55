// models::nnls (the non-negative least squares under every analytical fit) against a brute-force
// enumeration of every passive set on random problems, many with several active constraints and
// with nearly collinear columns.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <random>

#include "base/error.hpp"
#include "models/calibrate.hpp"

namespace pacer::models {
namespace {

double objective_of(const Eigen::MatrixXd& a, const Eigen::VectorXd& y, const Eigen::VectorXd& ridge,
                    const Eigen::VectorXd& x) {
  return (a * x - y).squaredNorm() + x.dot(ridge.cwiseProduct(x));
}

// The exact optimum by enumeration: the optimum minimises the objective on its own passive set, and
// every feasible passive-set minimiser is a feasible point, so the best feasible one is the optimum.
double brute_force_minimum(const Eigen::MatrixXd& a, const Eigen::VectorXd& y, const Eigen::VectorXd& ridge) {
  const auto p = static_cast<unsigned>(a.cols());
  Eigen::MatrixXd g = a.transpose() * a;
  g.diagonal() += ridge;
  const Eigen::VectorXd h = a.transpose() * y;
  double best = y.squaredNorm();  // x = 0
  for (unsigned mask = 1; mask < (1u << p); ++mask) {
    std::vector<Eigen::Index> idx;
    for (unsigned j = 0; j < p; ++j)
      if (mask & (1u << j)) idx.push_back(j);
    const auto m = static_cast<Eigen::Index>(idx.size());
    Eigen::MatrixXd gs(m, m);
    Eigen::VectorXd hs(m);
    for (Eigen::Index r = 0; r < m; ++r) {
      hs(r) = h(idx[static_cast<size_t>(r)]);
      for (Eigen::Index c = 0; c < m; ++c) gs(r, c) = g(idx[static_cast<size_t>(r)], idx[static_cast<size_t>(c)]);
    }
    const Eigen::VectorXd xs = gs.ldlt().solve(hs);
    if (!xs.allFinite() || (xs.array() < 0).any()) continue;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(a.cols());
    for (Eigen::Index r = 0; r < m; ++r) x(idx[static_cast<size_t>(r)]) = xs(r);
    best = std::min(best, objective_of(a, y, ridge, x));
  }
  return best;
}

TEST(Nnls, FindsTheSameOptimumAsEnumeratingEveryPassiveSet) {
  std::mt19937_64 rng(25);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> cols(1, 10);
  int several_active = 0, collinear = 0;
  for (int problem = 0; problem < 400; ++problem) {
    const int p = cols(rng);
    const int n = std::uniform_int_distribution<int>(std::max(1, p - 2), 40)(rng);
    Eigen::MatrixXd a(n, p);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < p; ++j) a(i, j) = normal(rng);
    // Every third problem: some columns almost copies of another (as b/(b + b_half) and ln b
    // nearly are over a short range of b).
    const bool near_degenerate = p >= 2 && problem % 3 == 0;
    if (near_degenerate) {
      ++collinear;
      for (int j = 1; j < p; j += 2) a.col(j) = a.col(j - 1) + 1e-6 * a.col(j);
    }
    // Unit-RMS columns and the ridges solve_relative uses: a tiny one, or a prior's weight.
    for (int j = 0; j < p; ++j) a.col(j) /= std::sqrt(a.col(j).squaredNorm() / n);
    Eigen::VectorXd ridge(p);
    for (int j = 0; j < p; ++j) ridge(j) = normal(rng) > 0 ? 1e-12 : 1e-4;
    // A truth with negative coefficients, so that several constraints bind, plus noise.
    Eigen::VectorXd truth(p);
    for (int j = 0; j < p; ++j) truth(j) = normal(rng) - 0.3;
    Eigen::VectorXd y = a * truth;
    for (int i = 0; i < n; ++i) y(i) += 0.1 * normal(rng);

    double obj = std::numeric_limits<double>::quiet_NaN();
    const Eigen::VectorXd x = nnls(a, y, ridge, &obj);
    ASSERT_EQ(x.size(), p);
    EXPECT_TRUE((x.array() >= 0).all()) << "problem " << problem;
    EXPECT_NEAR(obj, objective_of(a, y, ridge, x), 1e-12 * y.squaredNorm()) << "problem " << problem;
    const double best = brute_force_minimum(a, y, ridge);
    EXPECT_NEAR(obj, best, 1e-9 * best) << "problem " << problem << ": " << p << " columns, " << n << " rows";
    several_active += (x.array() == 0).count() >= 2;
  }
  // The draw does what it is for: many problems bind several constraints, many are near-degenerate.
  EXPECT_GT(several_active, 100);
  EXPECT_GT(collinear, 100);
}

TEST(Nnls, KeepsTheUnconstrainedSolutionWhenItIsFeasible) {
  Eigen::MatrixXd a(5, 3);
  a << 1, 0, 2, 1, 1, 0, 2, 1, 1, 3, 2, 0, 1, 4, 1;
  const Eigen::Vector3d truth(0.5, 1.5, 2.0);
  const Eigen::VectorXd y = a * truth;
  double obj = 1;
  const auto x = nnls(a, y, Eigen::VectorXd::Zero(3), &obj);
  EXPECT_NEAR((x - truth).norm(), 0, 1e-12);
  EXPECT_NEAR(obj, 0, 1e-20);
}

TEST(Nnls, AllZeroWhenEveryColumnPointsAway) {
  Eigen::MatrixXd a(3, 2);
  a << 1, 2, 1, 1, 2, 1;
  const Eigen::VectorXd y = -a.col(0) - a.col(1);
  double obj = 0;
  const auto x = nnls(a, y, Eigen::VectorXd::Constant(2, 1e-12), &obj);
  EXPECT_EQ(x, Eigen::VectorXd::Zero(2));
  EXPECT_DOUBLE_EQ(obj, y.squaredNorm());
}

TEST(Nnls, RefusesMoreColumnsThanItSupports) {
  EXPECT_THROW(nnls(Eigen::MatrixXd::Ones(20, 13), Eigen::VectorXd::Ones(20), Eigen::VectorXd::Zero(13)), Error);
}

}  // namespace
}  // namespace pacer::models
