# libpmemzclient and pmemzctl tests that need no daemon (the integration
# tests in tests/integration/ run them against the real one).
if(NOT TARGET pmemzclient)
  return()
endif()

# ABI: exports == version script == public header functions; the installed
# clients and the examples call the exported functions only.
set(_symbol_clients "")
foreach(_t pmemzctl nbdkit-pmemz-plugin pmemz-example pmemz-reconnect pmemz-demo)
  if(TARGET ${_t})
    list(APPEND _symbol_clients $<TARGET_FILE:${_t}>)
  endif()
endforeach()
add_test(NAME client-symbols
  COMMAND sh ${PMEMZ_TEST_SRC}/unit/test-symbols.sh $<TARGET_FILE:pmemzclient>
          ${PMEMZ_CLIENT_SRC_DIR}/libpmemzclient.sym
          ${PMEMZ_CLIENT_SRC_DIR}/libpmemzadmin.h ${CMAKE_C_COMPILER} ${PMEMZ_GENERATED_INCLUDE_DIR}
          ${_symbol_clients})
set_tests_properties(client-symbols PROPERTIES SKIP_RETURN_CODE 77 LABELS "unit;client")

# Argument checks, connection errors, the transport against a fake daemon.
add_executable(test-libpmemzclient ${PMEMZ_TEST_SRC}/unit/test-libpmemzclient.c
  ${PMEMZ_TEST_SRC}/unit/fake-daemon.c)
target_link_libraries(test-libpmemzclient PRIVATE pmemzclient_static PkgConfig::CMOCKA)
add_test(NAME client-lib COMMAND test-libpmemzclient)
set_tests_properties(client-lib PROPERTIES TIMEOUT 60 LABELS "unit;client")

# Whom the library trusts: the daemon's SO_PEERCRED uid, the /tmp fallback directory.
add_executable(test-client-trust ${PMEMZ_TEST_SRC}/unit/test-client-trust.c)
target_link_libraries(test-client-trust PRIVATE pmemzclient_static pmemzcommon PkgConfig::CMOCKA)
add_test(NAME client-trust COMMAND test-client-trust)
set_tests_properties(client-trust PROPERTIES TIMEOUT 60 LABELS "unit;client")
if(TARGET pmemzerod)
  set_tests_properties(client-trust PROPERTIES ENVIRONMENT "PMEMZ_DAEMON=$<TARGET_FILE:pmemzerod>")
endif()

# pmemzctl: value formatting and the text/JSON output backends.
add_executable(test-pmemzctl-output ${PMEMZ_TEST_SRC}/unit/test-pmemzctl-output.c)
target_link_libraries(test-pmemzctl-output PRIVATE pmemzctl_output pmemzclient_static PkgConfig::CMOCKA)
add_test(NAME client-ctl-output COMMAND test-pmemzctl-output)
set_tests_properties(client-ctl-output PROPERTIES LABELS "unit;client")

# pmemzctl metrics: the Prometheus exposition (escaping, histogram, families).
add_executable(test-pmemzctl-metrics ${PMEMZ_TEST_SRC}/unit/test-pmemzctl-metrics.c)
target_link_libraries(test-pmemzctl-metrics PRIVATE pmemzctl_output pmemzclient_static PkgConfig::CMOCKA)
add_test(NAME client-ctl-metrics COMMAND test-pmemzctl-metrics)
set_tests_properties(client-ctl-metrics PROPERTIES LABELS "unit;client")

# The systemd timer + service pair that runs pmemzctl metrics every 15 s.
add_test(NAME client-ctl-metrics-units
  COMMAND sh ${PMEMZ_TEST_SRC}/unit/test-metrics-units.sh ${PROJECT_BINARY_DIR}/systemd
          $<TARGET_FILE:pmemzctl>)
set_tests_properties(client-ctl-metrics-units PROPERTIES SKIP_RETURN_CODE 77
  LABELS "unit;client")

# pmemzctl: usage errors and an unreachable daemon give one line and a non-zero exit.
add_test(NAME client-ctl-cli
  COMMAND sh ${PMEMZ_TEST_SRC}/unit/test-pmemzctl-cli.sh $<TARGET_FILE:pmemzctl>)
set_tests_properties(client-ctl-cli PROPERTIES LABELS "unit;client")

# The client reserve's depth policy, with simulated latency and allocation rate.
add_executable(test-reserve-depth ${PMEMZ_TEST_SRC}/unit/test-reserve-depth.c)
target_link_libraries(test-reserve-depth PRIVATE pmemzclient_static PkgConfig::CMOCKA)
add_test(NAME client-reserve-depth COMMAND test-reserve-depth)
set_tests_properties(client-reserve-depth PROPERTIES TIMEOUT 60 LABELS "unit;client")
