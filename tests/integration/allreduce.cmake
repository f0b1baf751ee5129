# Issue 3: vigil-allreduce (host backend) across 2 nodes of the local Slurm cluster: one
# `sbatch -N 2` job whose mpirun puts one rank on each node (see allreduce_sbatch_test.sh).
if(TARGET vigil-allreduce)
  add_test(NAME allreduce_sbatch_2node
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/allreduce_sbatch_test.sh
            ${PROJECT_SOURCE_DIR} $<TARGET_FILE:vigil-allreduce>)
  set_tests_properties(allreduce_sbatch_2node PROPERTIES
    LABELS integration RUN_SERIAL TRUE TIMEOUT 600)
endif()
