# Offline checker (common/check/check.c, pmemzd_check) and the daemon on damaged
# media: crafted images in memory and files in /dev/shm; no daemon process.
add_executable(test-check ${PMEMZ_TEST_SRC}/unit/test-check.c)
target_link_libraries(test-check PRIVATE pmemzd_check pmemzd_storage PkgConfig::CMOCKA)
add_test(NAME unit-check COMMAND test-check)
set_tests_properties(unit-check PROPERTIES LABELS "unit" TIMEOUT 120)

# Regression tests: region_open (format_load + recovery) on damaged media.
add_executable(test-damage-recovery ${PMEMZ_TEST_SRC}/unit/test-damage-recovery.c
  ${PMEMZ_TEST_SRC}/unit/media-fixture.c)
target_link_libraries(test-damage-recovery PRIVATE pmemzd_check pmemzd_storage
  PkgConfig::CMOCKA)
add_test(NAME unit-damage-recovery COMMAND test-damage-recovery)
add_test(NAME unit-damage-recovery-cacheline COMMAND test-damage-recovery)
set_tests_properties(unit-damage-recovery unit-damage-recovery-cacheline
  PROPERTIES LABELS "unit" TIMEOUT 120)
set_tests_properties(unit-damage-recovery-cacheline
  PROPERTIES ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE")

# The real daemon on damaged copies of a region, and pmemzctl check on them
# (reuses the integration harness, tests/integration/harness.c).
if(TARGET pmemz_itest AND TARGET pmemzctl)
  add_executable(itest-damage ${PMEMZ_TEST_SRC}/integration/test-damage.c)
  target_link_libraries(itest-damage PRIVATE pmemz_itest pmemzd_check)
  add_dependencies(itest-damage pmemzerod pmemzctl)
  add_test(NAME integ-damage-cacheline COMMAND itest-damage)
  set_tests_properties(integ-damage-cacheline PROPERTIES
    ENVIRONMENT "PMEM2_FORCE_GRANULARITY=CACHE_LINE"
    SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS "integration")
  add_test(NAME integ-damage-default COMMAND itest-damage)
  set_tests_properties(integ-damage-default PROPERTIES
    ENVIRONMENT_MODIFICATION "PMEM2_FORCE_GRANULARITY=unset:"
    SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS "integration")
endif()

# pmemzctl check without a daemon: usage errors, unusable input, JSON.
if(TARGET pmemzctl)
  add_test(NAME client-ctl-check
    COMMAND sh ${PMEMZ_TEST_SRC}/unit/test-pmemzctl-check.sh $<TARGET_FILE:pmemzctl>)
  set_tests_properties(client-ctl-check PROPERTIES LABELS "unit;client" TIMEOUT 60)
endif()

# The checker reads only: nm finds no pstore, format writer or libpmem2
# store symbol in pmemzctl nor in the pmemzd_check library.
if(TARGET pmemzctl)
  add_test(NAME unit-reader-symbols
    COMMAND sh ${PMEMZ_TEST_SRC}/unit/test-reader-symbols.sh $<TARGET_FILE:pmemzctl>
      $<TARGET_FILE:pmemzd_check>)
  set_tests_properties(unit-reader-symbols PROPERTIES LABELS "unit" SKIP_RETURN_CODE 77
    TIMEOUT 60)
endif()
