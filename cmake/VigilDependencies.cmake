# All third-party dependencies come from Debian packages (see scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(yaml-cpp REQUIRED)
# yaml-cpp 0.8 (trixie, forky) names its target yaml-cpp::yaml-cpp and deprecates the plain
# name; 0.7 (bookworm) has only the plain one.
if(NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)
endif()
find_package(CLI11 REQUIRED)
# Debian's cpp-httplib is a compiled library (libcpp-httplib.so, OpenSSL on) found by pkg-config.
find_package(PkgConfig REQUIRED)
pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
if(NOT TARGET httplib::httplib)
  add_library(httplib::httplib ALIAS PkgConfig::CPP_HTTPLIB)
endif()
# libmicrohttpd: the drainer's event-driven HTTP listener (slow clients cannot hold threads).
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
find_package(prometheus-cpp REQUIRED)
find_package(OpenSSL REQUIRED)
# libmunge: reports and operator requests signed with MUNGE credentials (auth: munge).
pkg_check_modules(MUNGE REQUIRED IMPORTED_TARGET munge)
if(NOT VIGIL_SLURM_ONLY)
  find_package(MPI REQUIRED COMPONENTS CXX)
endif()

# libslurm has no CMake package; Debian ships slurm/slurm.h and libslurm.so.
find_path(SLURM_INCLUDE_DIR slurm/slurm.h REQUIRED)
find_library(SLURM_LIBRARY NAMES slurm REQUIRED)
if(NOT TARGET vigil_slurm_external)
  add_library(vigil_slurm_external INTERFACE)
  target_include_directories(vigil_slurm_external INTERFACE ${SLURM_INCLUDE_DIR})
  target_link_libraries(vigil_slurm_external INTERFACE ${SLURM_LIBRARY})
  add_library(vigil::slurm_external ALIAS vigil_slurm_external)
endif()
# The release the headers describe (SLURM_VERSION_NUMBER, 0xMMmmuu), for the summary; the code
# adapts to it in libs/slurm/src/slurm_compat.h.
file(STRINGS ${SLURM_INCLUDE_DIR}/slurm/slurm_version.h _vigil_slurm_version
  REGEX "^#define SLURM_VERSION_NUMBER")
string(REGEX REPLACE ".*0x([0-9a-fA-F]+).*" "\\1" _vigil_slurm_version "${_vigil_slurm_version}")
math(EXPR _vigil_major "0x${_vigil_slurm_version} >> 16")
math(EXPR _vigil_minor "(0x${_vigil_slurm_version} >> 8) & 255")
math(EXPR _vigil_micro "0x${_vigil_slurm_version} & 255")
if(_vigil_minor LESS 10)
  set(_vigil_minor "0${_vigil_minor}")
endif()
set(VIGIL_SLURM_VERSION "${_vigil_major}.${_vigil_minor}.${_vigil_micro}")

if(VIGIL_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(VIGIL_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
