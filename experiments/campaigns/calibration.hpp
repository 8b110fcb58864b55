#pragma once
// `pacer calibrate` as one library call: read a profile from the trace store, resolve the device,
// fit the chosen model (models/calibrate.hpp), print it, and write the model (and, when asked, the
// predictions CSV and the predicted table of the device's whole grid) back.
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include "models/calibrate.hpp"
#include "traces/records.hpp"

namespace pacer::experiments {

struct CalibrationRequest {
  std::filesystem::path store;  // holds the profile; the model goes to its /models
  // Profile record; none: the only measured (not predicted) profile in the store.
  std::optional<std::string> profile;
  // Catalog name or device file; none: the store's /device, else the catalog entry a GPU-frequency
  // profile names (its frequencies checked and its V(f) used when there is one).
  std::optional<std::string> device;
  std::optional<std::string> model_name;       // record name under /models; none: models::model_record_name
  std::optional<std::string> predictions_csv;  // one row per measured point (models::predictions_csv)
  bool predict = false;                        // also write the predicted table for the device's whole grid
  // Learned transfer: the reference profile, "NAME" in the same store or "FILE.h5:NAME".
  std::optional<std::string> reference;
  // Analytical transfer between boards (models::TransferPrior): another board's full sweep of the
  // same workload, "NAME" in the same store or "FILE.h5:NAME"; its device is looked up in the catalog.
  std::optional<std::string> prior;
  // Modes: a GPU-frequency profile of the same workload in the same store.
  std::optional<std::string> frequency_profile;
  // JSON Lines instead of the text: one object for the model (model_record_json); the lines naming
  // the files written go to the log (stderr) so that `out` holds JSON alone.
  bool json = false;
  // The model and its fit; the reference and frequency-profile tables and the V(f) table are filled
  // in here.
  models::CalibrationOptions calibration;
};

// Fits, prints to `out` (the model and its errors, then a line per file written) and writes. Every
// output is checked before the fit, and the results are printed before the files are written.
// Throws OptionError / SettingError naming the setting at fault, Error for a fit that fails.
void run_calibration(const CalibrationRequest& request, std::ostream& out);

// The fitted parameters (or a learned model's size), the error table and the uncertainty of a model
// record, as `pacer calibrate` prints them.
std::string format_model_record(const traces::ModelRecord& record);

// The same as one JSON object: name, kind, workload, device, the profile and the points used, the
// parameters and their standard errors (names with their units: "p_idle_w"), and every metric, an
// error in percent with the suffix "_pct" ("time_mape_cv_pct").
std::string model_record_json(const traces::ModelRecord& record, const std::string& profile, size_t points_used,
                              size_t points);


}  // namespace pacer::experiments
