# Issue 4: vigil-drainer against the real local Slurm cluster (drain, resume, ownership, DOWN
# nodes, breaker, restart, slurmctld outage). See docs/slurm-sink.md.
if(TARGET vigil-drainer AND TARGET vigil::checks)
  vigil_add_integration_test(drainer_slurm_test
    SOURCES
      ${CMAKE_CURRENT_LIST_DIR}/drainer/drainer_slurm_test.cpp
      ${PROJECT_SOURCE_DIR}/tests/drainer/slurm/slurm_test_cluster.cpp
    LIBS vigil::checks httplib::httplib nlohmann_json::nlohmann_json
    DEPENDS vigil-drainer
    DEFINITIONS VIGIL_DRAINER_BINARY="$<TARGET_FILE:vigil-drainer>"
    TIMEOUT 600)
  target_include_directories(drainer_slurm_test PRIVATE ${PROJECT_SOURCE_DIR}/tests/drainer/slurm)
else()
  message(STATUS "tests/integration: vigil-drainer not defined; drainer_slurm_test not built")
endif()
