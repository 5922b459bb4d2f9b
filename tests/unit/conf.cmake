# Configuration tests: cmocka unit tests of the parser plus one ctest per
# golden case in tests/golden/ (NAME.expected with NAME.conf and/or
# NAME.args; see the top of tests/unit/test-conf.c), and, once the daemon
# links, `pmemzerod -n` on a good and a bad file.
set(_golden_dir ${PMEMZ_TEST_SRC}/golden)

add_executable(test-conf ${PMEMZ_TEST_SRC}/unit/test-conf.c)
target_link_libraries(test-conf PRIVATE pmemzd_conf PkgConfig::CMOCKA)
add_test(NAME unit-conf COMMAND test-conf)
set_tests_properties(unit-conf PROPERTIES LABELS "unit" TIMEOUT 60)

# pmemz_parse_rate: one rate syntax for the file and pmemzctl set-rate.
add_executable(test-rate ${PMEMZ_TEST_SRC}/unit/test-rate.c)
target_link_libraries(test-rate PRIVATE pmemzcommon PkgConfig::CMOCKA)
add_test(NAME unit-rate COMMAND test-rate)
set_tests_properties(unit-rate PROPERTIES LABELS "unit" TIMEOUT 60)

# log_escape: client-chosen strings in the log.
add_executable(test-log ${PMEMZ_TEST_SRC}/unit/test-log.c)
target_link_libraries(test-log PRIVATE pmemzd_conf PkgConfig::CMOCKA)
add_test(NAME unit-log COMMAND test-log)
set_tests_properties(unit-log PROPERTIES LABELS "unit" TIMEOUT 60)

# The shipped example configuration loads.
get_filename_component(_example ${PMEMZ_TEST_SRC}/../etc/pmemzerod.conf ABSOLUTE)
add_test(NAME conf-example COMMAND test-conf --check ${_example})
set_tests_properties(conf-example PROPERTIES LABELS "unit;golden" TIMEOUT 60)

file(GLOB _golden_cases CONFIGURE_DEPENDS ${_golden_dir}/*.expected)
list(SORT _golden_cases)
foreach(_g ${_golden_cases})
  get_filename_component(_name ${_g} NAME)
  string(REGEX REPLACE "\\.expected$" "" _name "${_name}")
  add_test(NAME golden-conf-${_name} COMMAND test-conf --golden ${_golden_dir} ${_name})
  set_tests_properties(golden-conf-${_name} PROPERTIES LABELS "unit;golden" TIMEOUT 60)
endforeach()

# pmemzerod -n: "configuration OK" and exit 0, or every error with FILE:LINE and exit 1.
if(TARGET pmemzerod)
  set(_check ${_golden_dir}/daemon-check.sh)
  set(_env "RUNTIME_DIRECTORY=/run/pmemzerod-test" "STATE_DIRECTORY=/var/lib/pmemzerod-test")
  add_test(NAME daemon-check-config-good
    COMMAND ${_check} 0 "configuration OK"
            $<TARGET_FILE:pmemzerod> -n -c ${_golden_dir}/good-full.conf)
  add_test(NAME daemon-check-config-default
    COMMAND ${_check} 0 "configuration OK" $<TARGET_FILE:pmemzerod> -n)
  add_test(NAME daemon-check-config-bad
    COMMAND ${_check} 1 "bad-values\\.conf:[0-9]+: "
            $<TARGET_FILE:pmemzerod> -n -c ${_golden_dir}/bad-values.conf)
  add_test(NAME daemon-check-config-bad-option
    COMMAND ${_check} 1 "unknown option '--no-such-option'"
            $<TARGET_FILE:pmemzerod> -n --no-such-option)
  set_tests_properties(daemon-check-config-good daemon-check-config-default
    daemon-check-config-bad daemon-check-config-bad-option
    PROPERTIES ENVIRONMENT "${_env}" LABELS "golden" TIMEOUT 60)
endif()
