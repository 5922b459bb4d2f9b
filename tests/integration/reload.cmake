# Integration test of reload (SIGHUP): regions added, removed and kept while
# in use, allow lists, quotas, zeroer settings, log_level, invalid files,
# leases across reloads.  Once per granularity like integration.cmake's
# tests; the allow-list part needs root (setuid to uid 65534) and says so
# when it is skipped.  pmemz_itest (the harness) comes from
# integration.cmake, included after this file (fragments are sorted).
if(NOT TARGET pmemzerod OR NOT TARGET pmemzclient)
  message(STATUS "integration test 'reload' skipped: pmemzerod/pmemzclient not defined")
  return()
endif()

add_executable(itest-reload ${PMEMZ_TEST_SRC}/integration/test-reload.c)
target_link_libraries(itest-reload PRIVATE pmemz_itest)
add_dependencies(itest-reload pmemzerod)

add_test(NAME integ-reload-cacheline COMMAND itest-reload)
set_tests_properties(integ-reload-cacheline PROPERTIES
  ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE"
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "integration")

add_test(NAME integ-reload-default COMMAND itest-reload)
set_tests_properties(integ-reload-default PROPERTIES
  ENVIRONMENT_MODIFICATION "PMEM2_FORCE_GRANULARITY=unset:"
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "integration")
