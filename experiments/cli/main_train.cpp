// `pacer-train`: every command, with the libtorch training library (the `pacer` front execs it).
#include "dnn/learned_trainer.hpp"
#include "experiments/cli/cli.hpp"

int main(int argc, char** argv) {
  pacer::cli::restart_with_training_environment(argv);
  pacer::dnn::install_learned_trainer();
  return pacer::cli::main(argc, argv);
}
