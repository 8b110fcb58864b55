# Cross build for aarch64 (a Jetson's architecture) with Debian's g++-aarch64-linux-gnu against an
# arm64 sysroot of Debian 12's packages (tests/arm64/sysroot.sh); programs built here run under
# qemu-user with the sysroot as their root (gtest's test discovery and ctest included).
#   cmake -DCMAKE_TOOLCHAIN_FILE=tests/arm64/aarch64-toolchain.cmake -DPACER_ARM64_SYSROOT=DIR ...
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

if(NOT PACER_ARM64_SYSROOT)
  set(PACER_ARM64_SYSROOT "$ENV{PACER_ARM64_SYSROOT}")
endif()
if(NOT IS_DIRECTORY "${PACER_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu")
  message(FATAL_ERROR "PACER_ARM64_SYSROOT='${PACER_ARM64_SYSROOT}' is not an arm64 sysroot: make one with tests/arm64/sysroot.sh")
endif()
set(PACER_ARM64_SYSROOT "${PACER_ARM64_SYSROOT}" CACHE PATH "arm64 sysroot (tests/arm64/sysroot.sh)")
# try_compile projects see the sysroot too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES PACER_ARM64_SYSROOT)

# Libraries, headers and CMake packages from the sysroot only; programs (h5cc, ...) from neither:
# the host's would answer with the host's paths.
set(CMAKE_FIND_ROOT_PATH "${PACER_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# FindHDF5 would ask the host's h5c++ wrapper; without one it searches the sysroot (hdf5/serial).
set(HDF5_C_COMPILER_EXECUTABLE "" CACHE FILEPATH "" FORCE)
set(HDF5_CXX_COMPILER_EXECUTABLE "" CACHE FILEPATH "" FORCE)
set(HDF5_USE_STATIC_LIBRARIES OFF)

# The linker resolves the libraries' own dependencies (libhdf5 -> libcurl, ...) in the sysroot.
set(_pacer_arm64_libs "-Wl,-rpath-link,${PACER_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,${PACER_ARM64_SYSROOT}/lib/aarch64-linux-gnu")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_pacer_arm64_libs}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_pacer_arm64_libs}")

# Programs built here (tests, gtest's discovery) run under qemu-user with the sysroot's loader and libraries.
find_program(PACER_QEMU_AARCH64 qemu-aarch64 NO_CMAKE_FIND_ROOT_PATH)
if(PACER_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${PACER_QEMU_AARCH64};-L;${PACER_ARM64_SYSROOT}")
endif()
