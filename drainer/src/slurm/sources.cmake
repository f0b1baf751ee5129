# Slurm sink of vigil::drainer (docs/slurm-sink.md): the libslurm SlurmApi, to_hostlist(), and
# the job-queue reader vigil-submit uses; one libslurm init/lock for all (libslurm_init.h).
set(VIGIL_DRAINER_SLURM_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/libslurm_init.cpp
  ${CMAKE_CURRENT_LIST_DIR}/slurm_client.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hostlist.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jobs.cpp
)
if(TARGET vigil_drainer)
  target_sources(vigil_drainer PRIVATE ${VIGIL_DRAINER_SLURM_SOURCES})
  target_link_libraries(vigil_drainer PRIVATE vigil::slurm_external)
  set(VIGIL_DRAINER_SLURM_TARGET vigil_drainer)
else()
  # Until drainer/src/core/sources.cmake creates vigil_drainer, the sink builds on its own.
  add_library(vigil_drainer_slurm STATIC ${VIGIL_DRAINER_SLURM_SOURCES})
  target_include_directories(vigil_drainer_slurm PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
  target_link_libraries(vigil_drainer_slurm PUBLIC vigil::checks PRIVATE vigil::slurm_external)
  set(VIGIL_DRAINER_SLURM_TARGET vigil_drainer_slurm)
endif()
