# Crash consistency: invariants I1, I2, I3 and I5 of docs/DESIGN.md.
#
#   crash-powerfail   simulated power failure: the storage core in-process,
#                     every drain of a workload (and of recovery) a crash
#                     point, several media images per point, each recovered
#                     and checked (tests/crash/test-powerfail.c, pmsim.c)
#   crash-kill9       the real daemon SIGKILLed at random moments under
#                     several client processes, restarted, checked
#                     (tests/crash/test-kill9.c)
#
#   ctest -L crash                         both, CI-sized
#   test-powerfail --long 1200             20 minutes of random workloads
#   test-kill9 --long 600                  10 minutes of kill cycles
set(_crash_dir ${PMEMZ_TEST_SRC}/crash)

# The offline checker (common/check/check.c) is the oracle for every image.
add_executable(test-powerfail ${_crash_dir}/test-powerfail.c ${_crash_dir}/pmsim.c)
target_include_directories(test-powerfail PRIVATE ${_crash_dir})
target_link_libraries(test-powerfail PRIVATE pmemzd_storage pmemzd_check)
# pmsim traces the mappings region_open() creates (format, recovery).
target_link_options(test-powerfail PRIVATE -Wl,--wrap=pstore_open)

# Every drain of a 100-step workload with the zeroer in lock step (the same
# drain sequence in every run); then a shorter one with the zeroer threads
# running free (cut points differ from run to run, still all legal).
add_test(NAME crash-powerfail COMMAND test-powerfail)
add_test(NAME crash-powerfail-concurrent COMMAND test-powerfail --concurrent --steps 40 --seed 7)
set_tests_properties(crash-powerfail crash-powerfail-concurrent PROPERTIES
  LABELS "crash" TIMEOUT 1200)

# kill -9 torture: the real daemon and libpmemzclient.  The integration
# harness is compiled in (integration.cmake is read after this file).
if(TARGET pmemzerod AND TARGET pmemzclient)
  set(_crash_itest ${PMEMZ_TEST_SRC}/integration)
  add_executable(test-kill9 ${_crash_dir}/test-kill9.c ${_crash_dir}/tag-pattern.c
    ${_crash_itest}/harness.c ${_crash_itest}/raw.c)
  target_include_directories(test-kill9 PRIVATE ${_crash_dir} ${_crash_itest} ${PROJECT_SOURCE_DIR}/client)
  target_link_libraries(test-kill9 PRIVATE pmemzd_check pmemzproto pmemzclient
    PkgConfig::CMOCKA Threads::Threads)
  target_compile_definitions(test-kill9 PRIVATE PMEMZ_DAEMON_PATH="$<TARGET_FILE:pmemzerod>")
  add_dependencies(test-kill9 pmemzerod)
  add_test(NAME crash-kill9 COMMAND test-kill9)
  set_tests_properties(crash-kill9 PROPERTIES LABELS "crash" TIMEOUT 1200 SKIP_RETURN_CODE 77)
else()
  message(STATUS "crash-kill9 skipped: pmemzerod or pmemzclient not defined")
endif()
