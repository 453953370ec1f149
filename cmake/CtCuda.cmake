# Optional CUDA, in two independent parts:
#
#   CT_CUDA_KERNELS  our own CUDA kernels (real/gpu), compiled by nvcc into the
#                    static library ct_gpu; no libtorch involved. On by
#                    default wherever a CUDA compiler is found: the CUDA toolkit
#                    is installed on CPU-only machines too, so the kernels are
#                    compiled (not run) on every build that can.
#   CT_CUDA          the GPU paths through libtorch (c10d NCCL, CUDA tensors);
#                    needs a CUDA-enabled libtorch given through Torch_DIR, so
#                    it is forced off, saying why, when the libtorch found has
#                    no CUDA (Debian's libtorch-dev is CPU only).
#
# Included after find_package(Torch) by CtDependencies.cmake, and by the device
# check's small project (scripts/device-check/CMakeLists.txt), which may have no
# libtorch at all. Defines ct_add_cuda_library() and ct_use_torch_cuda().

include(CheckLanguage)

# --- CT_CUDA_KERNELS -------------------------------------------------------

# check_language does nothing when CMAKE_CUDA_COMPILER is already set, so a
# compiler given with -DCMAKE_CUDA_COMPILER=/path/to/nvcc is the one used.
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(ct_cuda_kernels_default ON)
else()
  set(ct_cuda_kernels_default OFF)
endif()
option(CT_CUDA_KERNELS "Compile our own CUDA kernels (real/gpu) with nvcc; on by default when a CUDA compiler is found"
       ${ct_cuda_kernels_default})

if(NOT CMAKE_CUDA_COMPILER)
  if(CT_CUDA_KERNELS)
    set(CT_CUDA_KERNELS OFF CACHE BOOL "Compile our own CUDA kernels (real/gpu) with nvcc" FORCE)
  endif()
  message(STATUS "clustertwin: CT_CUDA_KERNELS off: no CUDA compiler found (no working nvcc on PATH; "
                 "give -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc); real/gpu builds its stub")
elseif(NOT CT_CUDA_KERNELS)
  message(STATUS "clustertwin: CT_CUDA_KERNELS off (as asked, although ${CMAKE_CUDA_COMPILER} was found); "
                 "real/gpu builds its stub")
endif()

if(CT_CUDA_KERNELS)
  # Ampere and Hopper (the H100/H200 machines): machine code for both, plus
  # PTX. Set before enable_language, which would otherwise pick nvcc's own
  # default (sm_75, which uses none of Hopper's instructions). A value given
  # with -DCMAKE_CUDA_ARCHITECTURES is kept.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures for our kernels")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  if(CMAKE_CUDA_HOST_COMPILER)
    set(ct_host "${CMAKE_CUDA_HOST_COMPILER}")
  else()
    set(ct_host "nvcc's default, g++ on PATH")
  endif()
  message(STATUS "clustertwin: CT_CUDA_KERNELS on: nvcc ${CMAKE_CUDA_COMPILER_VERSION} (${CMAKE_CUDA_COMPILER}), "
                 "host compiler ${ct_host}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
endif()

# Warnings are errors in our CUDA code too. -Werror=all-warnings covers nvcc's
# own front end (cudafe, ptxas); -Xcompiler passes the host flags of
# ct_target_defaults to the host compiler for the host side of each .cu.
# -Wpedantic is left out: the host code nvcc generates is not pedantic C++.
set(CT_CUDA_WARNING_FLAGS -Werror=all-warnings "-Xcompiler=-Wall,-Wextra,-Werror,-Wno-unused-parameter")

# ct_add_cuda_library(NAME SOURCES ... [DEPS ...]): a static library of our .cu
# files, compiled by nvcc as C++20 (only call it when CT_CUDA_KERNELS is on).
# Plain C++ targets link it: the CUDA runtime is linked statically into it, so
# they need neither nvcc nor libcudart.so.
function(ct_add_cuda_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>")
  if(DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set_target_properties(${name} PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON CUDA_EXTENSIONS OFF)
  else()
    # Debian 12's CMake (3.25) does not know nvcc's -std=c++20 (nvcc has had
    # it since 12.0), and a .cu file takes its dialect from CXX_STANDARD (20,
    # required: CtCompiler) when it has no CUDA_STANDARD, which CMake then
    # refuses. So here the target has no standard properties and the flag is
    # given by hand.
    set_property(TARGET ${name} PROPERTY CXX_STANDARD)
    set_property(TARGET ${name} PROPERTY CXX_STANDARD_REQUIRED)
    set_property(TARGET ${name} PROPERTY CXX_EXTENSIONS)
    target_compile_options(${name} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>")
  endif()
  target_compile_options(${name} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:${CT_CUDA_WARNING_FLAGS}>")
  set_target_properties(${name} PROPERTIES CUDA_RUNTIME_LIBRARY Static)
  target_link_libraries(${name} PUBLIC CUDA::cudart_static ${ARG_DEPS})
endfunction()

# --- CT_CUDA ---------------------------------------------------------------

# Where libtorch was looked for (CtDependencies; the device check's probe), say
# what CT_CUDA is and why. CAFFE2_USE_CUDA comes from libtorch's CMake config.
if(DEFINED TORCH_FOUND OR DEFINED Torch_FOUND)
  if(CT_CUDA AND NOT CAFFE2_USE_CUDA)
    message(STATUS "clustertwin: CT_CUDA turned off: the libtorch found (${Torch_DIR}) was built without CUDA; "
                   "point Torch_DIR at a CUDA-enabled libtorch to build the GPU paths")
    set(CT_CUDA OFF CACHE BOOL "GPU paths (needs a CUDA-enabled libtorch)" FORCE)
  elseif(CT_CUDA)
    message(STATUS "clustertwin: CT_CUDA on: libtorch ${Torch_VERSION} with CUDA (${Torch_DIR}); "
                   "torch targets get CT_HAVE_CUDA_TORCH=1")
  elseif(CAFFE2_USE_CUDA)
    message(STATUS "clustertwin: CT_CUDA off (not asked for): the libtorch found (${Torch_DIR}) has CUDA; "
                   "-DCT_CUDA=ON builds the GPU paths")
  else()
    message(STATUS "clustertwin: CT_CUDA off: the libtorch found (${Torch_DIR}, ${Torch_VERSION}) was built without "
                   "CUDA (CAFFE2_USE_CUDA is off); the GPU paths need a CUDA-enabled libtorch through Torch_DIR, "
                   "such as a pip PyTorch's on a GPU machine (docs/device-check.md)")
  endif()
endif()

# The definitions that torch targets get: CT_HAVE_CUDA_TORCH=1 when CT_CUDA is
# on, nothing otherwise. Code tests it with `#if defined(CT_HAVE_CUDA_TORCH)`.
if(CT_CUDA)
  set(CT_TORCH_CUDA_DEFINITIONS CT_HAVE_CUDA_TORCH=1)
else()
  set(CT_TORCH_CUDA_DEFINITIONS "")
endif()

# ct_use_torch_cuda(TARGET): adds CT_TORCH_CUDA_DEFINITIONS to a target that
# uses libtorch (call it beside ct_use_torch); does nothing when CT_CUDA is off.
function(ct_use_torch_cuda target)
  if(CT_TORCH_CUDA_DEFINITIONS)
    target_compile_definitions(${target} PUBLIC ${CT_TORCH_CUDA_DEFINITIONS})
  endif()
endfunction()
