ct_add_test(ct_launcher_test LABELS integration SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/launcher_test.cpp
            ${PROJECT_SOURCE_DIR}/tests/cli/run_command.cpp LIBS ct_common)
ct_add_test(ct_dist_env_test LABELS unit SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/dist_env_test.cpp LIBS ct_launch)
