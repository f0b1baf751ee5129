# Host checks around the GPUs: PCIe AER counters (pcie_aer), the GPU stack's systemd services
# (host_services), the filesystems the SKU lists (host_mounts), memory an idle node holds
# (host_idle_memory), the NVMe drives' own health (host_nvme).
target_sources(vigil_checks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/host_mounts.cpp
  ${CMAKE_CURRENT_LIST_DIR}/host_services.cpp
  ${CMAKE_CURRENT_LIST_DIR}/idle_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvme_health.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pcie_aer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/unit_names.cpp
)
