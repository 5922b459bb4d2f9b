# Tenants by cgroup (tenant = cgroup, admin_cgroups, allow_cgroups, reload)
# against the real daemon and real cgroups, and the peer identity race
# (SO_PEERPIDFD against a reused pid).  Root and a writable cgroup2
# hierarchy, else skipped with 77.
if(NOT TARGET pmemzerod OR NOT TARGET pmemzctl)
  message(STATUS "integration test 'tenant' skipped: pmemzerod/pmemzctl not defined")
  return()
endif()

add_executable(itest-tenant ${PMEMZ_TEST_SRC}/integration/test-tenant.c)
target_link_libraries(itest-tenant PRIVATE pmemz_itest)
add_dependencies(itest-tenant pmemzerod pmemzctl)
add_test(NAME integ-tenant COMMAND itest-tenant)
set_tests_properties(integ-tenant PROPERTIES
  ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE"
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "integration;admin;tenant" RUN_SERIAL TRUE)

# peer.c alone (pmemzd_server holds it), against a pid reused for real.
add_executable(itest-peer-race ${PMEMZ_TEST_SRC}/integration/test-peer-race.c)
target_link_libraries(itest-peer-race PRIVATE pmemzd_server)
add_test(NAME integ-peer-race COMMAND itest-peer-race)
set_tests_properties(integ-peer-race PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "integration;tenant" RUN_SERIAL TRUE)
