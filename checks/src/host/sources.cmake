# Host checks around the GPUs: PCIe AER counters (pcie_aer).
target_sources(vigil_checks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/pcie_aer.cpp
)
