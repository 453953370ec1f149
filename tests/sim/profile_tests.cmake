# Cluster profiles: units, parsing, the shipped profiles, every class of bad profile.
ct_add_test(ct_cluster_profile_test LABELS unit
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/cluster_profile_test.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/cluster_profile_errors_test.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/units_test.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/cluster_profile_yaml_test.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/field_reader_test.cpp
  LIBS ct_cluster_profile)
