# The SIGBUS guard of common/sigbus.c: faults caught per thread and per
# range, every other SIGBUS handled as before (each case in a child).
add_executable(test-sigbus ${PMEMZ_TEST_SRC}/unit/test-sigbus.c)
target_link_libraries(test-sigbus PRIVATE pmemzcommon PkgConfig::CMOCKA Threads::Threads)
add_test(NAME unit-sigbus COMMAND test-sigbus)
set_tests_properties(unit-sigbus PROPERTIES LABELS "unit" TIMEOUT 60)
