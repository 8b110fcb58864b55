// Fuzzes the Zeus trace importer (traces/import/zeus.hpp) on both of its CSV inputs. The input is
// "<summary_power csv>\n@@@\n<summary_train csv>"; without the separator the train CSV is the real
// header alone. Only pacer::Error may escape; every imported workload is self-consistent.
#include <cmath>
#include <cstdint>
#include <string>

#include "base/error.hpp"
#include "fuzz_check.hpp"
#include "traces/import/zeus.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string power = text;
  std::string train = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n";
  if (const auto sep = text.find("\n@@@\n"); sep != std::string::npos) {
    power = text.substr(0, sep + 1);
    train = text.substr(sep + 5);
  }
  pacer::traces::zeus::ImportOptions options;
  options.gpu = "v100";
  try {
    const auto result = pacer::traces::zeus::import_text(power, train, options);
    for (const auto& w : result.workloads) {
      PACER_FUZZ_CHECK(!w.name.empty());
      for (const auto& p : w.profile.points) PACER_FUZZ_CHECK(p.knob.size() == w.profile.knob.dims.size());
      const auto caps = pacer::traces::zeus::protocol_caps_w(w.profile);
      for (size_t i = 1; i < caps.size(); ++i) PACER_FUZZ_CHECK(caps[i] >= caps[i - 1] || std::isnan(caps[i]));
      (void)w.proxy.relation_vector();
      (void)w.target.relation_vector();
    }
  } catch (const pacer::Error&) {
  }
  return 0;
}
