// The literal workload fixtures of tests/support (used by the hw tests, which link no libtorch)
// equal what describe_workload computes.
#include <gtest/gtest.h>

#include "models/workloads/workload.hpp"
#include "tests/support/workloads.hpp"

namespace pacer::models {
namespace {

void expect_same(const traces::WorkloadInfo& fixture) {
  const auto computed = describe_workload(fixture.name);
  EXPECT_EQ(computed.name, fixture.name);
  EXPECT_EQ(computed.family, fixture.family);
  EXPECT_EQ(computed.task, fixture.task);
  EXPECT_EQ(computed.input_shape, fixture.input_shape);
  EXPECT_EQ(computed.num_classes, fixture.num_classes);
  EXPECT_EQ(computed.parameters, fixture.parameters);
  EXPECT_DOUBLE_EQ(computed.flops_per_sample, fixture.flops_per_sample);
  EXPECT_DOUBLE_EQ(computed.bytes_per_sample, fixture.bytes_per_sample);
  EXPECT_DOUBLE_EQ(computed.weight_bytes, fixture.weight_bytes);
  EXPECT_DOUBLE_EQ(computed.memory_per_sample_bytes, fixture.memory_per_sample_bytes);
}

TEST(WorkloadFixtures, MatchDescribeWorkload) {
  expect_same(testing::resnet18_cifar());
  expect_same(testing::resnet8_quarter_fmnist());
}

}  // namespace
}  // namespace pacer::models
