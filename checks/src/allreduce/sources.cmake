# all_reduce checks (nccl_allreduce_nvlink, nccl_allreduce_ib, host_allreduce,
# fabric_allreduce_ib): they launch
# vigil-allreduce (nccl-bench/) or a site's nccl-tests all_reduce_perf through mpirun and parse
# its JSON/text with vigil::ncclbench (MPI-free, CUDA-free: vigil-check needs no libmpi/libnccl).
set(vigil_allreduce_check_sources
  ${CMAKE_CURRENT_LIST_DIR}/allreduce_launch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/allreduce_repeats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nccl_allreduce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/host_allreduce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fabric_allreduce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fabric_rounds.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fabric_job.cpp
)
target_sources(vigil_checks PRIVATE ${vigil_allreduce_check_sources})
target_link_libraries(vigil_checks PRIVATE vigil::ncclbench)
