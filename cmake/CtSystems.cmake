# The system registry (common/systems.def) for the build: CT_SYSTEMS lists the
# systems' names in order. The layers add a folder per system from it
# (models/, sim/, real/, experiments/, tests/) and the CLI its entries
# (cli/NAME/sim.cpp, cli/NAME/plan.cpp, cli/NAME/validate.cpp, cli/NAME/run.cpp),
# so that a new system is its folders and one line of common/systems.def.
# Each system's folder defines ct_sim_NAME (sim/) and ct_run_NAME (real/);
# experiments/NAME has the system's section of the demo report.
set(CT_SYSTEMS_DEF "${PROJECT_SOURCE_DIR}/common/systems.def")
file(STRINGS "${CT_SYSTEMS_DEF}" _ct_system_lines REGEX "^CT_SYSTEM\\(")
set(CT_SYSTEMS "")
foreach(_line IN LISTS _ct_system_lines)
  if(NOT _line MATCHES "^CT_SYSTEM\\(([a-z][a-z0-9_]*), \"[^\"]+\"\\)$")
    message(FATAL_ERROR "${CT_SYSTEMS_DEF}: '${_line}' is not CT_SYSTEM(name, \"Title\")")
  endif()
  list(APPEND CT_SYSTEMS ${CMAKE_MATCH_1})
endforeach()
set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${CT_SYSTEMS_DEF}")
