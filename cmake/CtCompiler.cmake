# Compiler settings shared by every target of ours.

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)

# Unity builds: each target's sources compile in batches of up to 16 as one
# translation unit, so the heavy headers (libtorch's, SimGrid's,
# nlohmann/json, CLI11) are parsed once per batch rather than once per file.
# This is what keeps a clean build (make test on a fresh machine) short on
# 2 cores. The price: names in anonymous namespaces must be unique within a
# target. -DCT_UNITY_BUILD=OFF compiles one file per unit (quicker rebuilds
# of a single file while editing).
option(CT_UNITY_BUILD "compile each target's sources in batches (faster clean builds)" ON)
set(CMAKE_UNITY_BUILD ${CT_UNITY_BUILD})
set(CMAKE_UNITY_BUILD_BATCH_SIZE 16)

# ccache when present: rebuilds after a branch switch cost seconds, not minutes.
find_program(CT_CCACHE ccache)
if(CT_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_C_COMPILER_LAUNCHER "${CT_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${CT_CCACHE}")
  message(STATUS "clustertwin: using ccache (${CT_CCACHE})")
endif()

# ct_target_defaults(TARGET): warnings as errors in our own code, the
# repository root on the include path ("traces/event.h"), C++20.
function(ct_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror -Wno-unused-parameter)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>")
  else()
    target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>")
  endif()
endfunction()

# ct_add_library(NAME SOURCES ... [DEPS ...]): a static library of ours.
function(ct_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  ct_target_defaults(${name})
  if(ARG_DEPS)
    target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  endif()
endfunction()
