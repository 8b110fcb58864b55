// `pacer demo`: the README's main job.
#include "experiments/cli/cli.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/demo.hpp"
#include "traces/error.hpp"

namespace pacer::cli {
namespace {

int run(const po::variables_map& vm) {
  experiments::DemoOptions o;
  o.quick = vm["quick"].as<bool>();
  o.out_dir = vm["out"].as<std::string>();
  o.device = vm["device"].as<std::string>();
  o.threads = vm["threads"].as<int>();
  require_range(o.threads, 1, 256, "--threads", "threads");
  return experiments::run_demo(o);
}

Command make() {
  Command c;
  c.name = "demo";
  c.summary = "the whole pipeline on an emulated Jetson Nano: profile, calibrate, relations, validate, sweep, report";
  c.order = 5;
  c.description =
      "From nothing: pre-trains a small CNN on Fashion-MNIST classes 0-4, profiles it over the full (f, b)\n"
      "grid of the emulated board (virtual time), calibrates the analytical model on 8 points, measures the\n"
      "proxy relation (classes 5-9, half A), validates Ours, Baseline 1, Baseline 2 and the oracle with real\n"
      "training on the target (classes 5-9, half B) at several caps, sweeps every policy over the cap range,\n"
      "and writes tables and plots. Rerunning resumes from the trace store in --out.";
  c.add_options = [](po::options_description& d) {
    d.add_options()("quick", po::bool_switch()->default_value(false), "fewer batch sizes, seeds and caps (under 2 minutes)")(
        "out,o", po::value<std::string>()->default_value("pacer-out/demo"), "output folder (trace store, checkpoint, report)")(
        "device", po::value<std::string>()->default_value("jetson-nano"), "catalog device to emulate")(
        "threads", po::value<int>()->default_value(2), "CPU intra-op threads of the training");
  };
  c.run = run;
  return c;
}

PACER_REGISTER_COMMAND(make);

}  // namespace
}  // namespace pacer::cli
