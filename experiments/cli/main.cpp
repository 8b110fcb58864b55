#include "experiments/cli/cli.hpp"

int main(int argc, char** argv) { return pacer::cli::main(argc, argv); }
