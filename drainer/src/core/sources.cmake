# vigil::drainer library (core) + vigil-drainer executable. The Slurm (src/slurm) and
# Kubernetes (src/k8s) sinks add their sources to vigil_drainer with target_sources().
# /metrics is served by our own cpp-httplib server with prometheus-cpp's TextSerializer
# (prometheus-cpp::core only): one listener, one port, auth and body limits in one place,
# and tests bind 127.0.0.1:0 once instead of twice.
add_library(vigil_drainer
  ${CMAKE_CURRENT_LIST_DIR}/config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/policy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/journal.cpp
  ${CMAKE_CURRENT_LIST_DIR}/metrics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/drainer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/http_server.cpp
  ${CMAKE_CURRENT_LIST_DIR}/commands.cpp
)
add_library(vigil::drainer ALIAS vigil_drainer)
target_include_directories(vigil_drainer
  PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/../../include>
  PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(vigil_drainer
  PUBLIC vigil::checks nlohmann_json::nlohmann_json
  PRIVATE yaml-cpp httplib::httplib prometheus-cpp::core OpenSSL::SSL OpenSSL::Crypto
          Threads::Threads)

add_executable(vigil-drainer ${CMAKE_CURRENT_LIST_DIR}/main.cpp)
target_link_libraries(vigil-drainer PRIVATE vigil::drainer CLI11::CLI11)
install(TARGETS vigil-drainer RUNTIME DESTINATION bin)
