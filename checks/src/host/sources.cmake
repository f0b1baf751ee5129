# Host checks around the GPUs: PCIe AER counters (pcie_aer), the GPU stack's systemd services
# (host_services), the filesystems the SKU lists (host_mounts).
target_sources(vigil_checks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/host_mounts.cpp
  ${CMAKE_CURRENT_LIST_DIR}/host_services.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pcie_aer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/unit_names.cpp
)
