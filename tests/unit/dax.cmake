# Device-DAX discovery (common/dax/dax.c) and `pmemzctl discover`, without
# devices: parsing, clipping and names, and the "nothing found" case of a
# build host.  The real devices are covered by the VM tests (tests/vm/).
if(TARGET pmemzd_dax)
  add_executable(test-dax ${PMEMZ_TEST_SRC}/unit/test-dax.c)
  target_link_libraries(test-dax PRIVATE pmemzd_dax PkgConfig::CMOCKA)
  add_test(NAME dax-unit COMMAND test-dax)
  set_tests_properties(dax-unit PROPERTIES LABELS "unit;dax" TIMEOUT 60)
endif()
if(TARGET pmemzctl)
  add_test(NAME dax-discover-cli
    COMMAND sh ${PMEMZ_TEST_SRC}/unit/test-pmemzctl-discover.sh $<TARGET_FILE:pmemzctl>)
  set_tests_properties(dax-discover-cli PROPERTIES LABELS "unit;dax;client"
    SKIP_RETURN_CODE 77 TIMEOUT 60)
endif()
