// `pacer`: the light front. It runs the commands linked into it (no libtorch) and hands every other
// invocation to PACER_FULL_PROGRAM beside it (see cli.hpp, front_main).
#include "experiments/cli/cli.hpp"

int main(int argc, char** argv) {
  return pacer::cli::front_main(argc, argv, PACER_FULL_PROGRAM);
}
