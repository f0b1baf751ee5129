# InfiniBand sysfs checks (ib_port, ib_counters, ib_gpudirect) and their private sysfs reader.
target_sources(vigil_checks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/ib_sysfs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ib_port.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ib_counters.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ib_gpudirect.cpp
)
