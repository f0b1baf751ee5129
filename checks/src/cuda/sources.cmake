# CUDA probes (gpu_gemm, gpu_hbm, gpu_pcie_bw, gpu_memtest, gpu_sdc, gpu_soak; the hooks'
# gpu_sanity), included by checks/CMakeLists.txt.
# With CUDA: the real probes, built for VIGIL_CUDA_ARCHS. Without: one fallback that keeps the
# seven checks (same names) and reports them as not applicable.
if(VIGIL_CUDA_ENABLED)
  target_sources(vigil_checks PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/probe_result.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_labels.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_probe.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_driver.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cublaslt_loader.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_gemm.cu
    ${CMAKE_CURRENT_LIST_DIR}/gpu_hbm.cu
    ${CMAKE_CURRENT_LIST_DIR}/gpu_pcie_bw.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_memtest.cu
    ${CMAKE_CURRENT_LIST_DIR}/gpu_sdc.cu
    ${CMAKE_CURRENT_LIST_DIR}/sdc_verdict.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_soak.cu
    ${CMAKE_CURRENT_LIST_DIR}/soak_summary.cpp
    ${CMAKE_CURRENT_LIST_DIR}/gpu_sanity.cu)
  # cuBLASLt is dlopen()ed by gpu_gemm (cublaslt_loader.h): only its headers are needed here.
  # The CUDA runtime is linked statically: vigil-check is also the Slurm hook binary, and a
  # DT_NEEDED libcudart.so.13 makes the loader exit 127 before main() on a node without that
  # runtime in its library path, which Slurm takes as a failed Prolog (drain, requeue). Only
  # the driver's libcuda.so.1 is then needed, which cudart opens itself at the first call.
  target_link_libraries(vigil_checks PRIVATE CUDA::cudart_static)
  target_include_directories(vigil_checks PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(vigil_checks PRIVATE VIGIL_HAVE_CUDA=1)
  set_target_properties(vigil_checks PROPERTIES CUDA_ARCHITECTURES "${VIGIL_CUDA_ARCHS}")
else()
  # probe_result.cpp, sdc_verdict.cpp and soak_summary.cpp are pure C++; built here too so their
  # unit tests run in every build.
  target_sources(vigil_checks PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/probe_result.cpp
    ${CMAKE_CURRENT_LIST_DIR}/sdc_verdict.cpp
    ${CMAKE_CURRENT_LIST_DIR}/soak_summary.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_labels.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_driver.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_unavailable.cpp)
endif()
