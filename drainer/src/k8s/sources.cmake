# Kubernetes sink: kubeconfig / in-cluster config loading and the REST client behind
# vigil::drainer::KubeApi (cpp-httplib + OpenSSL). See docs/kubernetes.md.
set(VIGIL_K8S_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/kube_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kube_client.cpp
)

if(TARGET vigil_drainer)
  target_sources(vigil_drainer PRIVATE ${VIGIL_K8S_SOURCES})
  set(VIGIL_K8S_TARGET vigil_drainer)
else()
  # Stand-in used only while drainer/src/core has not created vigil_drainer yet, so this sink
  # and its tests build on their own. result.h is header-only, so no link to vigil::checks.
  add_library(vigil_drainer_k8s STATIC ${VIGIL_K8S_SOURCES})
  target_include_directories(vigil_drainer_k8s PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/../../include>
    $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/../../../checks/include>)
  set(VIGIL_K8S_TARGET vigil_drainer_k8s)
endif()

# Debian's libcpp-httplib is compiled with OpenSSL support; every translation unit that includes
# httplib.h must see the same define or the client classes differ in layout.
target_compile_definitions(${VIGIL_K8S_TARGET} PRIVATE CPPHTTPLIB_OPENSSL_SUPPORT)
target_link_libraries(${VIGIL_K8S_TARGET} PRIVATE
  httplib::httplib OpenSSL::SSL OpenSSL::Crypto yaml-cpp nlohmann_json::nlohmann_json)
