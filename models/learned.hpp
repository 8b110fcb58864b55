#pragma once
// The learned predictor (the PowerTrain approach, the baseline the analytical model must beat):
// a small MLP from configuration features (each knob dimension scaled to [0, 1] by the grid's
// maximum, and log2 b) to log time per mini-batch, log mean power and log peak power. It is
// trained on a reference workload's full profile and transferred to a new workload or device by
// re-training on k points (L2-SP: weights pulled towards the reference's). Prediction is plain C++
// on the stored weights (learned.cpp), so it is cheap and thread-safe; training runs in libtorch,
// which pacer_models does not link: the pacer_dnn library installs the trainer
// (dnn/learned_trainer.hpp), and a program without it can load and use learned models, not train them.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/device_model.hpp"
#include "traces/records.hpp"

namespace pacer::models {

struct LearnedOptions {
  std::vector<int> hidden = {32, 32};  // hidden layer widths
  int epochs = 800;                    // full-batch Adam epochs when training from scratch
  int transfer_epochs = 400;           // epochs when re-training from a reference model
  double learning_rate = 1e-2;
  double transfer_learning_rate = 3e-3;
  // L2-SP strength: sum of squared weight deviations from the reference, relative to the loss.
  double anchor_weight = 1e-3;
  double weight_decay = 1e-5;  // when training from scratch
  uint64_t seed = 1;
  int threads = 1;  // libtorch intra-op threads while training (restored after)
  // Divides each knob dimension (the device grid's maxima); empty: the maxima of the training points.
  std::vector<double> knob_scale;
};

class LearnedModel : public DeviceModel {
 public:
  struct Layer {
    int in = 0;
    int out = 0;
    std::vector<float> weight;  // out x in, row-major
    std::vector<float> bias;    // out
  };
  struct Net {
    traces::KnobSpace knob;
    std::vector<double> knob_scale;   // divides each knob dimension
    double log2_batch_scale = 1;      // divides log2 b
    std::vector<double> output_mean;  // de-standardisation of the 3 outputs (log space)
    std::vector<double> output_std;
    bool has_peak = true;       // false: trained without peak readings, peak predicted as NaN
    std::vector<Layer> layers;  // SiLU between layers, none after the last
  };

  LearnedModel(Net net, traces::ModelRecord record);

  traces::ModelKind kind() const override { return traces::ModelKind::learned; }
  const traces::KnobSpace& knob() const override { return net_.knob; }
  Prediction predict(const std::vector<double>& knob, int batch_size) const override;
  traces::ModelRecord to_record() const override;

  const Net& net() const { return net_; }

 private:
  Net net_;
  traces::ModelRecord record_;
};

// The configuration features the network reads: knob_d / knob_scale_d per dimension, then
// log2(b) / log2_batch_scale.
std::vector<float> learned_features(const LearnedModel::Net& net, const std::vector<double>& knob, int batch_size);
constexpr int kLearnedOutputs = 3;  // log time, log mean power, log peak power

// What trains the network (libtorch): installed once by a program that links pacer_dnn.
struct LearnedTrainer {
  std::unique_ptr<LearnedModel> (*train)(const std::vector<traces::ProfilePoint>& points, const traces::KnobSpace& knob,
                                         const LearnedOptions& options) = nullptr;
  std::unique_ptr<LearnedModel> (*transfer)(const LearnedModel& reference,
                                            const std::vector<traces::ProfilePoint>& points,
                                            const LearnedOptions& options) = nullptr;
};
void set_learned_trainer(LearnedTrainer trainer);

// train_learned and transfer_learned throw Error when no trainer is installed.
// Trains from scratch on `points` (deterministic for a seed). Throws Error for fewer than 2 points.
std::unique_ptr<LearnedModel> train_learned(const std::vector<traces::ProfilePoint>& points,
                                            const traces::KnobSpace& knob, const LearnedOptions& options);
// Re-trains `reference` on `points` of a new workload or device (knob scales from
// options.knob_scale, so a relative frequency means the same on both devices). Throws Error for no
// points or a knob space that differs from the reference's.
std::unique_ptr<LearnedModel> transfer_learned(const LearnedModel& reference,
                                               const std::vector<traces::ProfilePoint>& points,
                                               const LearnedOptions& options);

std::unique_ptr<LearnedModel> learned_from_record(const traces::ModelRecord& record);

}  // namespace pacer::models
