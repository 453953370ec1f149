# Third-party packages. scripts/install-deps.sh installs every one of them
# from Debian; nothing here downloads anything.

find_package(ZLIB REQUIRED)

if(CT_FUZZ)
  return()
endif()

find_package(Boost 1.74 REQUIRED)          # Boost.Graph is header-only
find_package(nlohmann_json 3 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SIMGRID REQUIRED IMPORTED_TARGET simgrid>=3.32)

find_package(Torch REQUIRED)
# CT_CUDA (a CUDA-enabled libtorch) and CT_CUDA_KERNELS (our own .cu files): cmake/CtCuda.cmake.
include(CtCuda)

find_package(CLI11 REQUIRED)

if(CT_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(CT_BUILD_BENCH)
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
