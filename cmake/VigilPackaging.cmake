# Debian packages (issue 23; docs/deploy.md, "Packages"): one per program, built from this build
# tree with `(cd OUT && cpack -G DEB --config <build>/CPackConfig.cmake)`.
#   vigil-check     vigil-check, vigil-hook, the SKU thresholds: what every compute node runs
#                   (slurmd's Prolog, Epilog, HealthCheckProgram). It links no libslurm and reaches
#                   Slurm through scontrol (docs/hooks.md, "Loading"), so it recommends
#                   slurm-client and works with any Slurm release.
#   vigil-allreduce the NCCL / MPI all_reduce benchmark the checks launch (CUDA builds need
#                   NVIDIA's libnccl2, which Debian does not ship: declared by hand).
#   vigil-drainer   the service (libslurm of the release it was built against).
#   vigil-submit    the CronJob's submitter.
# Depends are computed by dpkg-shlibdeps from each binary's DT_NEEDED entries, so a package asks
# for exactly the Debian libraries its binaries load.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME vigil)
set(CPACK_PACKAGE_VENDOR "Vigil")
set(CPACK_PACKAGE_CONTACT "Vigil maintainers <vigil@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU and fabric health checks for Slurm clusters")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)  # debug info stays in the build tree
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/vigil")

set(CPACK_DEBIAN_CHECK_PACKAGE_NAME vigil-check)
# vigil-check launches vigil-allreduce with transport modes that grow with releases (fabric,
# domain): an older vigil-allreduce refuses a newer mode and the all_reduce checks then error.
# Nodes without the all_reduce tests (hooks only) need no vigil-allreduce, so it is recommended,
# and an older one is declared broken (Debian Policy 7.3: Breaks forces the upgrade together).
# nvme-cli: host_nvme reads each drive's SMART log with it (without it that part is skipped).
set(CPACK_DEBIAN_CHECK_PACKAGE_RECOMMENDS
    "slurm-client, vigil-allreduce (>= ${CPACK_PACKAGE_VERSION}), nvme-cli")
set(CPACK_DEBIAN_CHECK_PACKAGE_BREAKS "vigil-allreduce (<< ${CPACK_PACKAGE_VERSION})")
set(CPACK_COMPONENT_CHECK_DESCRIPTION
    "Vigil node checks and Slurm hooks (vigil-check, vigil-hook, SKU thresholds)")
set(CPACK_DEBIAN_ALLREDUCE_PACKAGE_NAME vigil-allreduce)
set(CPACK_COMPONENT_ALLREDUCE_DESCRIPTION "Vigil all_reduce benchmark (vigil-allreduce)")
if(VIGIL_CUDA_ENABLED)
  # libnccl.so.2 comes from NVIDIA's CUDA repository (package libnccl2), which dpkg-shlibdeps
  # cannot resolve on a machine that has the toolkit under /usr/local/cuda only.
  set(CPACK_DEBIAN_ALLREDUCE_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_ALLREDUCE_PACKAGE_DEPENDS "libopenmpi3, libnccl2")
endif()
set(CPACK_DEBIAN_DRAINER_PACKAGE_NAME vigil-drainer)
set(CPACK_COMPONENT_DRAINER_DESCRIPTION "Vigil drainer service (vigil-drainer)")
set(CPACK_DEBIAN_SUBMIT_PACKAGE_NAME vigil-submit)
set(CPACK_COMPONENT_SUBMIT_DESCRIPTION "Vigil check submitter (vigil-submit)")
set(CPACK_DEBIAN_SUBMIT_PACKAGE_RECOMMENDS "slurm-client")

# What the packages add beside the programs (packaging/): the node package's slurm.conf hook
# scripts (/usr/share/vigil/hooks, active once slurm.conf names them) with their settings file
# /etc/vigil/hook.env and a slurm.conf example; the drainer package's systemd unit and its
# default /etc/vigil/drainer.yaml (dry_run until the admin turns it off). Files under /etc are
# conffiles: an upgrade keeps the site's edits.
set(_vigil_pkg ${PROJECT_SOURCE_DIR}/packaging)
if(NOT VIGIL_SLURM_ONLY)
  install(PROGRAMS ${_vigil_pkg}/node/prolog ${_vigil_pkg}/node/epilog
                   ${_vigil_pkg}/node/healthcheck
          DESTINATION share/vigil/hooks COMPONENT check)
  install(FILES ${_vigil_pkg}/node/hook.env DESTINATION /etc/vigil COMPONENT check)
  install(FILES ${_vigil_pkg}/node/slurm.conf.example
          DESTINATION share/doc/vigil-check/examples COMPONENT check)
  set(CPACK_DEBIAN_CHECK_PACKAGE_CONTROL_EXTRA ${_vigil_pkg}/node/conffiles)
endif()
install(FILES ${_vigil_pkg}/drainer/vigil-drainer.service DESTINATION lib/systemd/system
        COMPONENT drainer)
install(FILES ${_vigil_pkg}/drainer/drainer.yaml DESTINATION /etc/vigil COMPONENT drainer)
set(CPACK_DEBIAN_DRAINER_PACKAGE_CONTROL_EXTRA ${_vigil_pkg}/drainer/conffiles)

if(VIGIL_SLURM_ONLY)
  set(CPACK_COMPONENTS_ALL drainer submit)
else()
  set(CPACK_COMPONENTS_ALL check allreduce drainer submit)
endif()
include(CPack)
