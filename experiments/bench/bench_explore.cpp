// Selection latency and full-sweep throughput of the explorer, against brute-force scans of the
// same spaces (same answers; the ratio of times is the figure to quote):
//   nano      the Jetson Nano grid, 12 frequencies x 6 batch sizes (physics-shaped synthetic data
//             on the catalog's frequency and voltage tables)
//   zeus-*    the imported Zeus workloads (power limit x batch size), from pacer's data/zeus
//   orin      a synthetic AGX-Orin-size power-mode space: 20,160 modes (cores x CPU x GPU x memory
//             frequency) x 8 batch sizes, with 3% measurement-like noise (no monotonicity)
// Each sweep runs 1,000 caps evenly spaced over the space's power range. sweep1000/pacer is the
// pacer policy (counter vs_ours: its time per sweep over Algorithm 1's, timed in the same run).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <random>

#include "explore/policy.hpp"
#include "explore/space.hpp"
#include "traces/catalog/catalog.hpp"
#include "traces/import/zeus.hpp"

namespace {

using namespace pacer;  // a benchmark program, not a header

struct Case {
  std::string name;
  std::unique_ptr<explore::Space> space;
  std::unique_ptr<explore::Index> index;
  explore::Relation relation;
  std::vector<double> caps_w;
};

std::vector<double> caps_over(const explore::Space& s, int n) {
  std::vector<double> caps;
  const double lo = s.min_power_w() * 0.98, hi = s.max_power_w() * 1.01;
  for (int i = 0; i < n; ++i) caps.push_back(lo + (hi - lo) * i / (n - 1));
  return caps;
}

std::unique_ptr<Case> finish(std::string name, explore::Space space, std::vector<double> samples) {
  auto c = std::make_unique<Case>();
  c->name = std::move(name);
  c->space = std::make_unique<explore::Space>(std::move(space));
  c->index = std::make_unique<explore::Index>(*c->space);
  c->relation = explore::Relation{"r", std::move(samples)};
  c->caps_w = caps_over(*c->space, 1000);
  return c;
}

// The pacer policy against Algorithm 1 in the same benchmark: CPU seconds per sweep of each (CPU
// time, so a loaded machine does not skew the ratio), timed back to back.
double seconds_per_sweep(const Case& c, explore::Policy p) {
  const explore::PolicyContext ctx{c.index.get(), &c.relation};
  const std::clock_t t0 = std::clock();
  const int reps = 50;
  for (int i = 0; i < reps; ++i)
    for (double cap : c.caps_w) benchmark::DoNotOptimize(explore::select(p, ctx, cap).batch_size);
  return static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC / reps;
}

// P = P_idle + c(b) f V(f)^2, t = t_mem(b) + w(b) / f, with the Nano's catalog V(f).
std::unique_ptr<Case> nano_case() {
  const auto dev = traces::find_device("jetson-nano");
  explore::Space::Arrays a;
  a.knob = traces::KnobSpace::gpu_frequency();
  a.batch_sizes = {4, 8, 16, 32, 64, 128};
  for (double f : dev.gpu_freqs_hz) a.knob_settings.push_back({f});
  std::vector<double> samples;
  for (int b : a.batch_sizes) {
    const double c_b = 6.8e-9 * (1 - std::exp(-b / 32.0));
    for (size_t i = 0; i < dev.gpu_freqs_hz.size(); ++i) {
      const double f = dev.gpu_freqs_hz[i];
      const double v = dev.voltage_table.empty() ? 1.0 : dev.voltage_table[i].volt_v;
      a.time_per_batch_s.push_back(0.01 + 0.002 * b + b * 2.2e7 / f);
      a.power_w.push_back(dev.idle_power_w + c_b * f * v * v);
    }
    samples.push_back(50000.0 * (1 + b / 64.0));
  }
  return finish("nano", explore::Space::from_arrays(std::move(a)), samples);
}

std::unique_ptr<Case> orin_case() {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> noise(0.97, 1.03);
  explore::Space::Arrays a;
  a.knob = traces::KnobSpace::power_mode();
  a.basis = explore::PowerBasis::Peak;
  a.batch_sizes = {1, 2, 4, 8, 16, 32, 64, 128};
  const double gpu_mhz[] = {114.75, 216.75, 318.75, 420.75, 522.75, 624.75, 675.75,
                            828.75, 905.25, 1032.75, 1198.5, 1236.75, 1300.5, 1377.0};
  const double mem_mhz[] = {665.6, 2133, 3199, 3200};
  for (int cores = 1; cores <= 12; ++cores)
    for (int ci = 0; ci < 30; ++ci)
      for (double g : gpu_mhz)
        for (double m : mem_mhz) a.knob_settings.push_back({double(cores), (115.2 + ci * 70.0) * 1e6, g * 1e6, m * 1e6});
  std::sort(a.knob_settings.begin(), a.knob_settings.end());
  std::vector<double> samples;
  for (int b : a.batch_sizes) {
    for (const auto& k : a.knob_settings) {
      const double cores = k[0], cpu = k[1], gpu = k[2], mem = k[3];
      const double t = (0.004 * b * 1.3e9 / gpu + 0.002 * b * 3.2e9 / mem + 0.05 * 2.2e9 / (cpu * std::sqrt(cores))) *
                       noise(rng);
      const double p = (7 + 0.35 * cores * cpu / 2.2e9 + 18 * (1 - std::exp(-b / 16.0)) * std::pow(gpu / 1.3e9, 2.2) +
                        3 * mem / 3.2e9) *
                       noise(rng);
      a.time_per_batch_s.push_back(t);
      a.power_w.push_back(p);
    }
    samples.push_back(1e6 * (1 + b / 128.0));
  }
  return finish("orin", explore::Space::from_arrays(std::move(a)), samples);
}

std::vector<std::unique_ptr<Case>> zeus_cases() {
  std::vector<std::unique_ptr<Case>> out;
  const std::filesystem::path dir = traces::zeus::default_data_dir();
  if (!std::filesystem::exists(dir / "summary_train.csv")) {
    std::fprintf(stderr, "no Zeus traces under %s: zeus cases skipped\n", dir.c_str());
    return out;
  }
  for (const char* gpu : {"v100", "a40"}) {
    traces::zeus::ImportOptions o;
    o.data_dir = dir;
    o.gpu = gpu;
    for (const auto& w : traces::zeus::import_traces(o).workloads) {
      auto space = explore::Space::from_profile(w.profile);
      // The proxy with the pacer posterior (its runs and the looser metric level).
      auto rel = explore::Relation::from_set(w.proxy, space, &w.proxy_looser);
      auto c = finish(std::string("zeus-") + gpu + "/" + w.name, std::move(space), rel.samples_by_batch);
      c->relation = std::move(rel);
      out.push_back(std::move(c));
    }
  }
  return out;
}

void check_same_answers(const Case& c) {
  size_t differ = 0;
  for (double cap : c.caps_w) {
    const auto a = explore::select(explore::Policy::OursRobust, {c.index.get(), &c.relation}, cap);
    const auto b = explore::scan_fastest(*c.index, c.relation, cap);
    differ += a.feasible != b.feasible || (a.feasible && (a.knob_index != b.knob_index || a.batch_index != b.batch_index));
    if (c.index->one_dimensional()) {
      const auto x = explore::select(explore::Policy::Ours, {c.index.get(), &c.relation}, cap);
      const auto y = explore::scan_algorithm1(*c.index, c.relation, cap);
      differ += x.feasible != y.feasible || (x.feasible && (x.knob_index != y.knob_index || x.batch_index != y.batch_index));
    }
  }
  if (differ) {
    std::fprintf(stderr, "%s: %zu answers differ between the fast and the brute-force search\n", c.name.c_str(), differ);
    std::exit(1);
  }
}

void register_case(const Case& c) {
  const size_t configs = c.space->num_knobs() * c.space->num_batches();
  auto sweep = [&c, configs](benchmark::State& st, auto search) {
    for (auto _ : st)
      for (double cap : c.caps_w) benchmark::DoNotOptimize(search(cap));
    st.counters["configs"] = static_cast<double>(configs);
    st.counters["caps"] = static_cast<double>(c.caps_w.size());
    st.counters["per_selection"] = benchmark::Counter(static_cast<double>(c.caps_w.size()),
                                                      benchmark::Counter::kIsIterationInvariantRate |
                                                          benchmark::Counter::kInvert);
  };
  const explore::PolicyContext ctx{c.index.get(), &c.relation};
  if (c.index->one_dimensional()) {
    benchmark::RegisterBenchmark((c.name + "/sweep1000/algorithm1-binary").c_str(), [&c, sweep, ctx](benchmark::State& st) {
      sweep(st, [&](double cap) { return explore::select(explore::Policy::Ours, ctx, cap).batch_size; });
    });
    benchmark::RegisterBenchmark((c.name + "/sweep1000/algorithm1-linear").c_str(), [&c, sweep, ctx](benchmark::State& st) {
      sweep(st, [&](double cap) { return explore::scan_algorithm1(*c.index, c.relation, cap).batch_size; });
    });
  }
  benchmark::RegisterBenchmark((c.name + "/sweep1000/front").c_str(), [&c, sweep, ctx](benchmark::State& st) {
    sweep(st, [&](double cap) { return explore::select(explore::Policy::OursRobust, ctx, cap).batch_size; });
  });
  benchmark::RegisterBenchmark((c.name + "/sweep1000/brute-force-scan").c_str(), [&c, sweep, ctx](benchmark::State& st) {
    sweep(st, [&](double cap) { return explore::scan_fastest(*c.index, c.relation, cap).batch_size; });
  });
  benchmark::RegisterBenchmark((c.name + "/sweep1000/pacer").c_str(), [&c, sweep, ctx](benchmark::State& st) {
    sweep(st, [&](double cap) { return explore::select(explore::Policy::Pacer, ctx, cap).batch_size; });
    st.counters["vs_ours"] = seconds_per_sweep(c, explore::Policy::Pacer) / seconds_per_sweep(c, explore::Policy::Ours);
  });
  benchmark::RegisterBenchmark((c.name + "/index-build").c_str(), [&c](benchmark::State& st) {
    for (auto _ : st) benchmark::DoNotOptimize(explore::Index(*c.space));
  });
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<std::unique_ptr<Case>> cases;
  cases.push_back(nano_case());
  for (auto& z : zeus_cases()) cases.push_back(std::move(z));
  cases.push_back(orin_case());
  for (const auto& c : cases) {
    check_same_answers(*c);
    register_case(*c);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
