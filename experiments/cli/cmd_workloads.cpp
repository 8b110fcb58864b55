// `pacer workloads`: the workload registry with the cost per sample the emulated devices use.
#include <fmt/format.h>

#include <iostream>

#include "base/error.hpp"
#include "dnn/data/datasets.hpp"
#include "experiments/cli/cli.hpp"
#include "models/workloads/workload.hpp"

namespace pacer::cli {
namespace {

std::string human(double v, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T"};
  int p = 0;
  while (v >= 1000 && p < 4) v /= 1000, ++p;
  return fmt::format("{:.3g} {}{}", v, prefixes[p], unit);
}

int run_workloads(const po::variables_map& vm) {
  std::vector<std::string> names;
  if (vm.count("name"))
    names.push_back(vm["name"].as<std::string>());
  else
    names = models::workload_names();
  // Every workload described before a line is printed: an unknown name is the one error line.
  std::vector<models::WorkloadInfo> costs;
  for (const auto& n : names) costs.push_back(models::describe_workload(n));
  std::cout << fmt::format("{:<34} {:<11} {:<5} {:>10} {:>12} {:>12} {:>12} {:>12}\n", "WORKLOAD", "FAMILY", "TASK",
                           "PARAMS", "FLOP/SAMPLE", "TRAFFIC/SMP", "ACT MEM/SMP", "WEIGHT+OPT");
  for (const auto& w : costs) {
    std::cout << fmt::format("{:<34} {:<11} {:<5} {:>10} {:>12} {:>12} {:>12} {:>12}\n", w.name, w.family, w.task,
                             human(static_cast<double>(w.parameters), ""), human(w.flops_per_sample, "FLOP"),
                             human(w.bytes_per_sample, "B"), human(w.memory_per_sample_bytes, "B"),
                             human(w.weight_bytes, "B"));
  }
  if (vm["datasets"].as<bool>()) {
    std::cout << fmt::format("\n{:<20} {:<6} {:<14} {:>7}  {}\n", "DATASET", "TASK", "METRIC", "TARGET", "CONTENT");
    for (const auto& d : dnn::data::dataset_catalog())
      std::cout << fmt::format("{:<20} {:<6} {:<14} {:>7.3f}  {}\n", d.name, d.task, d.metric, d.default_target,
                               d.description);
    std::cout << "Also any folder or file: text:FILE (UTF-8), idx:DIR (IDX image/label files), cifar10:DIR and\n"
                 "cifar100:DIR (binary batches), cinic:DIR (CINIC-10 layout: [DIR/train/]<class>/*.png).\n";
  }
  std::cout << "\nFLOP/SAMPLE is forward + backward (3x forward); TRAFFIC is activation and gradient bytes moved per\n"
               "sample; ACT MEM is activation memory held for backward; WEIGHT+OPT is weights, gradients and Adam\n"
               "moments (fp32). Append @CxHxW (images) or @T (text context) to a name for another input shape.\n";
  return 0;
}

Command make() {
  Command c;
  c.name = "workloads";
  c.summary = "list the DNN workloads with parameters, FLOPs and memory per sample";
  c.order = 15;
  c.usage_tail = "[NAME]";
  c.description =
      "Costs are counted layer by layer from the network definition that training uses (conv, linear,\n"
      "attention FLOPs and activation sizes); the emulated Jetson derives time and power from them.";
  c.add_options = [](po::options_description& d) {
    d.add_options()("name", po::value<std::string>(), "one workload, e.g. resnet18@3x32x32 (default: all)")(
        "datasets", po::bool_switch()->default_value(false), "also list the named datasets");
  };
  c.positional = {"name"};
  c.run = run_workloads;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
