# Third-party packages. scripts/install-deps.sh installs every one of them
# from Debian; nothing here downloads anything.

if(CT_THIRD_PARTY_DIR)
  # What a bare machine lacks, carried there (scripts/device-check.sh --prepare).
  set(ZLIB_ROOT "${CT_THIRD_PARTY_DIR}")
  include_directories(SYSTEM "${CT_THIRD_PARTY_DIR}/include")
endif()
find_package(ZLIB REQUIRED)

# A header-only package from find_package, else from CT_THIRD_PARTY_DIR/include.
macro(ct_header_only_package package target header)
  find_package(${package} QUIET)
  if(NOT TARGET ${target})
    if(CT_THIRD_PARTY_DIR AND EXISTS "${CT_THIRD_PARTY_DIR}/include/${header}")
      add_library(${target} INTERFACE IMPORTED)
      set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${CT_THIRD_PARTY_DIR}/include")
      message(STATUS "clustertwin: ${package} from ${CT_THIRD_PARTY_DIR}/include")
    else()
      message(FATAL_ERROR "clustertwin: ${package} not found (install it: scripts/install-deps.sh; or give "
                          "CT_THIRD_PARTY_DIR with include/${header})")
    endif()
  endif()
endmacro()
ct_header_only_package(nlohmann_json nlohmann_json::nlohmann_json nlohmann/json.hpp)
ct_header_only_package(CLI11 CLI11::CLI11 CLI/CLI.hpp)

if(CT_FUZZ)
  # The fuzz targets' readers: JSON (above), YAML profiles and Chakra's protobuf.
  find_package(yaml-cpp REQUIRED)
  find_package(Protobuf REQUIRED)
  return()
endif()

if(NOT CT_REAL_ONLY)
  find_package(Boost 1.74 REQUIRED)          # Boost.Graph is header-only
  find_package(yaml-cpp REQUIRED)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(SIMGRID REQUIRED IMPORTED_TARGET simgrid>=3.32)
  # Chakra execution traces (traces/chakra): protoc and libprotobuf.
  find_package(Protobuf REQUIRED)
  if(NOT Protobuf_PROTOC_EXECUTABLE)
    message(FATAL_ERROR "clustertwin: protoc not found (install protobuf-compiler: scripts/install-deps.sh)")
  endif()
endif()

find_package(Torch REQUIRED)
# CT_CUDA (a CUDA-enabled libtorch) and CT_CUDA_KERNELS (our own .cu files): cmake/CtCuda.cmake.
include(CtCuda)

if(CT_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT TARGET GTest::gtest AND CT_THIRD_PARTY_DIR AND EXISTS "${CT_THIRD_PARTY_DIR}/gtest/CMakeLists.txt")
    message(STATUS "clustertwin: GoogleTest built from ${CT_THIRD_PARTY_DIR}/gtest")
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    add_subdirectory("${CT_THIRD_PARTY_DIR}/gtest" "${CMAKE_BINARY_DIR}/googletest" EXCLUDE_FROM_ALL SYSTEM)
    if(NOT TARGET GTest::gtest)  # GoogleTest's own CMake names them gtest and gtest_main
      add_library(GTest::gtest ALIAS gtest)
      add_library(GTest::gtest_main ALIAS gtest_main)
    endif()
  elseif(NOT TARGET GTest::gtest)
    message(FATAL_ERROR "clustertwin: GoogleTest not found (scripts/install-deps.sh installs it; or give "
                        "CT_THIRD_PARTY_DIR with gtest/, or -DCT_BUILD_TESTS=OFF)")
  endif()
  include(GoogleTest)
endif()
if(CT_BUILD_BENCH AND NOT CT_REAL_ONLY)
  find_package(benchmark REQUIRED)
endif()

# One precompiled header for every target that includes torch: the libtorch
# headers cost ~25 s per translation unit otherwise. Targets reuse it with
# ct_use_torch(TARGET).
add_library(ct_torch_pch STATIC "${PROJECT_SOURCE_DIR}/cmake/torch_pch.cpp")
target_link_libraries(ct_torch_pch PUBLIC ${TORCH_LIBRARIES})
ct_target_defaults(ct_torch_pch)  # the same flags as its users, or gcc ignores the PCH
target_precompile_headers(ct_torch_pch PRIVATE <torch/torch.h>)

# Executables (tests, the CLI, studies, benchmarks) reuse the same header:
# gcc refuses a header precompiled with -fPIC in a -fPIE compile, so their
# torch files compile with -fPIC too (it comes after CMake's -fPIE and wins;
# PIC code links into a PIE executable). One precompiled header instead of
# two saves ~50 s of a clean build.
function(ct_use_torch_pch_in_executable target)
  target_compile_options(${target} PRIVATE -fPIC)
  target_precompile_headers(${target} REUSE_FROM ct_torch_pch)
endfunction()

function(ct_use_torch target)
  target_link_libraries(${target} PUBLIC ${TORCH_LIBRARIES})
  target_precompile_headers(${target} REUSE_FROM ct_torch_pch)
  ct_use_torch_cuda(${target})
endfunction()
