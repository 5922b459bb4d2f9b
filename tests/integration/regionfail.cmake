# Integration test of region failures (docs/SECURITY.md): a truncated or damaged region goes offline while
# the others serve.  Once per granularity like integration.cmake's tests.
# pmemz_itest (the harness) comes from integration.cmake, included after this
# file (fragments are sorted); a link to a target defined later is fine.
if(NOT TARGET pmemzerod OR NOT TARGET pmemzclient OR NOT TARGET pmemzctl)
  message(STATUS "integration test 'regionfail' skipped: pmemzerod/pmemzclient/pmemzctl not defined")
  return()
endif()

add_executable(itest-regionfail ${PMEMZ_TEST_SRC}/integration/test-regionfail.c)
target_link_libraries(itest-regionfail PRIVATE pmemz_itest pmemzd_media PkgConfig::JSONC)
add_dependencies(itest-regionfail pmemzerod pmemzctl)

add_test(NAME integ-regionfail-cacheline COMMAND itest-regionfail)
set_tests_properties(integ-regionfail-cacheline PROPERTIES
  ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE"
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "integration")

add_test(NAME integ-regionfail-default COMMAND itest-regionfail)
set_tests_properties(integ-regionfail-default PROPERTIES
  ENVIRONMENT_MODIFICATION "PMEM2_FORCE_GRANULARITY=unset:"
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "integration")
