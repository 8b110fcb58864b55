# The command-line framework (option parsing, typed unit options, help, dispatch, the light front's
# hand-over): a small library, included by experiments/cli/CMakeLists.txt and by the standalone
# fuzz build (tests/fuzz), which links it instead of recompiling the sources.
add_library(pacer_cli STATIC
  ${CMAKE_CURRENT_LIST_DIR}/cli.cpp
  ${CMAKE_CURRENT_LIST_DIR}/options.cpp
)
target_link_libraries(pacer_cli PUBLIC pacer_traces Boost::program_options)
# A relative --config path that is not in the working directory is looked up in this checkout
# (cli.cpp), so `--config experiments/specs/NAME.ini` works from any folder.
get_filename_component(PACER_CLI_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/../.. ABSOLUTE)
target_compile_definitions(pacer_cli PRIVATE PACER_SOURCE_DIR="${PACER_CLI_SOURCE_DIR}")
