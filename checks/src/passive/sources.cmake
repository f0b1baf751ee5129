# Checks only the Slurm hooks run (`vigil-check hook`): XIDs and RDMA link outages from the
# kernel log since the last run, processes a finished job left on its GPUs.
target_sources(vigil_checks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/kmsg_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kmsg_xid.cpp
  ${CMAKE_CURRENT_LIST_DIR}/link_downtime.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_leftovers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/leftovers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/passive_suite.cpp
)
