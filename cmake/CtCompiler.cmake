# Compiler settings shared by every target of ours.

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)

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
