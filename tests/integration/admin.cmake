# Integration test of the admin RPCs (MAP, ZEROER) and their pmemzctl
# commands (map, pause, resume, set-rate, regions --map) against the real
# daemon, once per granularity like integration.cmake's tests.  Needs root
# (setuid to uid 65534 for the non-admin peer): skipped with 77 otherwise.
# pmemz_itest (the harness) comes from integration.cmake, included after this
# file (fragments are sorted); a link to a target defined later is fine.
if(NOT TARGET pmemzerod OR NOT TARGET pmemzclient OR NOT TARGET pmemzctl)
  message(STATUS "integration test 'admin' skipped: pmemzerod/pmemzclient/pmemzctl not defined")
  return()
endif()

add_executable(itest-admin ${PMEMZ_TEST_SRC}/integration/test-admin.c)
target_link_libraries(itest-admin PRIVATE pmemz_itest PkgConfig::JSONC)
add_dependencies(itest-admin pmemzerod pmemzctl)

add_test(NAME integ-admin-cacheline COMMAND itest-admin)
set_tests_properties(integ-admin-cacheline PROPERTIES
  ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE"
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "integration;admin")

add_test(NAME integ-admin-default COMMAND itest-admin)
set_tests_properties(integ-admin-default PROPERTIES
  ENVIRONMENT_MODIFICATION "PMEM2_FORCE_GRANULARITY=unset:"
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "integration;admin")
