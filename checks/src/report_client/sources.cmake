# NodeReport delivery to vigil-drainer (POST + retry, spool on failure). Owned with the drainer.
target_sources(vigil_checks PRIVATE ${CMAKE_CURRENT_LIST_DIR}/report_client.cpp)
target_link_libraries(vigil_checks PRIVATE httplib::httplib)
