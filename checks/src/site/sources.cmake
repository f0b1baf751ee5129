# Checks a site declares in files (site-checks/*.yaml beside the SKU files): docs/site-checks.md.
target_sources(vigil_checks PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/site_check.cpp
  ${CMAKE_CURRENT_LIST_DIR}/site_check_file.cpp
)
