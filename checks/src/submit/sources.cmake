# vigil-submit (docs/deploy.md, docs/recheck.md): the CronJob's entry point. vigil_submit is the
# library (pure planning in plan.cpp, process launching in submit.cpp); main.cpp only parses
# arguments. Node states and the job queue come from the drainer's libslurm clients
# (vigil::drainer: slurm_api.h, slurm_jobs.h). vigil::drainer is defined later (drainer/); CMake
# resolves the link at generate time.
add_library(vigil_submit STATIC
  ${CMAKE_CURRENT_LIST_DIR}/plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/submit.cpp
)
add_library(vigil::submit ALIAS vigil_submit)
target_include_directories(vigil_submit PUBLIC
  $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/../../include>
  $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/../../../drainer/include>)
target_link_libraries(vigil_submit
  PUBLIC vigil::checks vigil::drainer
  PRIVATE nlohmann_json::nlohmann_json vigil::slurm_external)

add_executable(vigil-submit ${CMAKE_CURRENT_LIST_DIR}/main.cpp)
target_link_libraries(vigil-submit PRIVATE vigil::submit CLI11::CLI11)
install(TARGETS vigil-submit RUNTIME DESTINATION bin)
