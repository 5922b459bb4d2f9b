# The shared containers of common/: the growable array (vector.h, with its
# overflow checks) and the uint64_t-keyed hash table (hashtab.c).
add_executable(test-vector ${PMEMZ_TEST_SRC}/unit/test-vector.c)
target_link_libraries(test-vector PRIVATE pmemzcommon PkgConfig::CMOCKA)
add_test(NAME unit-vector COMMAND test-vector)
add_executable(test-hashtab ${PMEMZ_TEST_SRC}/unit/test-hashtab.c)
target_link_libraries(test-hashtab PRIVATE pmemzcommon PkgConfig::CMOCKA)
add_test(NAME unit-hashtab COMMAND test-hashtab)
# A request over PTRDIFF_MAX must come back NULL under ASan too.
set_tests_properties(unit-vector unit-hashtab PROPERTIES LABELS "unit" TIMEOUT 60
  ENVIRONMENT "ASAN_OPTIONS=allocator_may_return_null=1")
