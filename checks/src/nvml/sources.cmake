# NVML checks (dlopen'ed libnvidia-ml.so.1; nvml.h is not needed). Explicit list.
target_sources(vigil_checks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/nvml_loader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_busy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_reset.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_count.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml_ecc.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml_row_remap.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml_retired_pages.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml_clock_events.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml_pcie.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml_nvlink.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml_fabric.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvlink_imex.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml_temperature.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvml_xid.cpp
)
