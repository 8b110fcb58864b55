#pragma once
// The libtorch trainer of the learned predictor (models/learned.hpp). pacer_models predicts with
// learned models but does not link libtorch; a program that trains them calls this once at start-up
// (the pacer-train executable does, and so do the dnn tests).
namespace pacer::dnn {

void install_learned_trainer();

}  // namespace pacer::dnn
