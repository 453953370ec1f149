# `cmake --install BUILD --prefix P`: what a user of an installed clustertwin
# gets.
#
#   P/bin/clustertwin                      the command (profiles embedded; no libtorch)
#   P/bin/clustertwin-torch                its torch commands (run, prune, eval, igsp, sis), which
#                                          clustertwin executes from its own directory
#   P/share/clustertwin/profiles/*.yaml    the shipped cluster profiles, to read or copy
#   P/share/clustertwin/traces/            the shipped traces (recorded runs, collectives, examples)
#   P/share/clustertwin/igsp/              the shipped IGSP checkpoint
#   P/include/clustertwin/...              the headers of the libraries below
#   P/lib/libct_*.a                        the twin's libraries (no libtorch)
#   P/lib/cmake/clustertwin/               find_package(clustertwin)
#
# The exported libraries are the plan model, traces, cluster profiles, the
# three twins and the calibrators: everything that runs without libtorch.
# The real executors (libtorch, Gloo) are reached through the command.
# find_package(clustertwin) gives clustertwin::ct_sim, clustertwin::ct_sim_nestpipe, ...

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(CT_EXPORTED_LIBRARIES ct_common ct_json ct_traces ct_plan ct_spec ct_device ct_transformer ct_cluster_profile ct_sim)
# Each system of common/systems.def: its policy library (models/NAME, where
# it has one), its twin (sim/NAME) and its fits (calibrators/NAME, where it
# has them); then the registry of twins and the calibrators' shared part.
foreach(system IN LISTS CT_SYSTEMS)
  if(TARGET ct_${system}_policy)
    list(APPEND CT_EXPORTED_LIBRARIES ct_${system}_policy)
  endif()
  list(APPEND CT_EXPORTED_LIBRARIES ct_sim_${system})
  if(TARGET ct_calibrate_${system})
    list(APPEND CT_EXPORTED_LIBRARIES ct_calibrate_${system})
  endif()
endforeach()
list(APPEND CT_EXPORTED_LIBRARIES ct_sim_twins ct_sim_mix ct_device_fit ct_calibrators_core ct_calibrators)
set(CT_INSTALL_INCLUDE_DIR "${CMAKE_INSTALL_INCLUDEDIR}/clustertwin")
set(CT_INSTALL_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/clustertwin")

install(TARGETS clustertwin clustertwin-torch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${CT_EXPORTED_LIBRARIES}
  EXPORT clustertwinTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CT_INSTALL_INCLUDE_DIR})
# The headers keep the source layout: #include "sim/core/simulator.h".
foreach(dir common models traces sim calibrators)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/${dir}/" DESTINATION "${CT_INSTALL_INCLUDE_DIR}/${dir}"
    FILES_MATCHING PATTERN "*.h"
    PATTERN "data" EXCLUDE PATTERN "examples" EXCLUDE PATTERN "torch" EXCLUDE PATTERN "igsp" EXCLUDE)
endforeach()
install(EXPORT clustertwinTargets NAMESPACE clustertwin:: DESTINATION ${CT_INSTALL_CMAKE_DIR})

install(DIRECTORY "${PROJECT_SOURCE_DIR}/sim/platforms/" DESTINATION "${CMAKE_INSTALL_DATADIR}/clustertwin/profiles"
  FILES_MATCHING PATTERN "*.yaml" PATTERN "README.md")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/traces/data/" DESTINATION "${CMAKE_INSTALL_DATADIR}/clustertwin/traces")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/models/igsp/data/" DESTINATION "${CMAKE_INSTALL_DATADIR}/clustertwin/igsp")

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/clustertwinConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/clustertwinConfig.cmake" INSTALL_DESTINATION ${CT_INSTALL_CMAKE_DIR})
write_basic_package_version_file("${PROJECT_BINARY_DIR}/clustertwinConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/clustertwinConfig.cmake" "${PROJECT_BINARY_DIR}/clustertwinConfigVersion.cmake"
  DESTINATION ${CT_INSTALL_CMAKE_DIR})
