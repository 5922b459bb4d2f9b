# Static analysis, label "lint": cppcheck over every source of
# this build, gcc -fanalyzer over the shipped code (daemon, client, common,
# proto).  Both read compile_commands.json; each suppression is in the
# script with its reason.  Not in the sanitizer or fuzz configurations:
# one run, in the default build, is enough.
if(PMEMZ_SANITIZE OR PMEMZ_FUZZ)
  return()
endif()
add_test(NAME lint-cppcheck
  COMMAND ${PMEMZ_TEST_SRC}/lint/cppcheck.sh ${PROJECT_BINARY_DIR}/compile_commands.json
          ${PROJECT_SOURCE_DIR} 2)
add_test(NAME lint-gcc-analyzer
  COMMAND ${PMEMZ_TEST_SRC}/lint/analyze.sh ${PROJECT_BINARY_DIR}/compile_commands.json
          ${PROJECT_SOURCE_DIR} 2)
set_tests_properties(lint-cppcheck lint-gcc-analyzer PROPERTIES
  LABELS "lint" TIMEOUT 900 SKIP_RETURN_CODE 77)
if(NOT CMAKE_C_COMPILER_ID STREQUAL "GNU")
  set_tests_properties(lint-gcc-analyzer PROPERTIES DISABLED TRUE)
endif()

# Layering, label "lint": within each folder no file calls (through a
# function another file defines) a file that calls it; read with nm from
# the object files.  Every folder of the product is checked.
find_program(PMEMZ_PYTHON3 python3)
if(PMEMZ_PYTHON3)
  add_test(NAME lint-call-cycles
    COMMAND ${PMEMZ_PYTHON3} ${PMEMZ_TEST_SRC}/lint/call-cycles.py --src ${PROJECT_SOURCE_DIR}
            ${PROJECT_BINARY_DIR} common common/log common/media common/dax common/check proto
            daemon daemon/config daemon/storage daemon/server client/lib client/pmemzctl
            client/nbdkit)
  add_test(NAME lint-call-cycles-selftest
    COMMAND ${PMEMZ_TEST_SRC}/lint/call-cycles-selftest.sh ${PMEMZ_TEST_SRC}/lint/call-cycles.py
            ${CMAKE_C_COMPILER})
  set_tests_properties(lint-call-cycles lint-call-cycles-selftest PROPERTIES
    LABELS "lint" ENVIRONMENT "NM=${CMAKE_NM}" SKIP_RETURN_CODE 77)
endif()

# Documentation against the code, label "lint" (tests/lint/doc-checks.py):
# pmemzctl(1)'s synopsis and command list against the CLI's command table,
# its metric names against the exporter, pmemzerod.conf(5)'s keys against
# the parser's tables, the plugin's man page against its config_help, every
# relative link of the Markdown pages, and no working-period phrase, role
# or bare tracker number in any file.  The selftest shows each check fail
# on a deliberate mismatch.
if(PMEMZ_PYTHON3)
  set(_doc ${PMEMZ_PYTHON3} ${PMEMZ_TEST_SRC}/lint/doc-checks.py)
  set(_src ${PROJECT_SOURCE_DIR})
  set(_doc_tests lint-doc-metrics lint-doc-conf lint-doc-links lint-doc-checks-selftest)
  add_test(NAME lint-doc-metrics
    COMMAND ${_doc} metrics --man ${_src}/docs/pmemzctl.1 --source ${_src}/client/pmemzctl/metrics.c)
  add_test(NAME lint-doc-conf
    COMMAND ${_doc} conf --man ${_src}/docs/pmemzerod.conf.5
            --source ${_src}/daemon/config/conf-ini.c)
  add_test(NAME lint-doc-links COMMAND ${_doc} links ${_src})
  add_test(NAME lint-doc-phrases COMMAND ${_doc} phrases ${_src})
  list(APPEND _doc_tests lint-doc-phrases)
  # docs/PERFORMANCE.md's result table is the render of the committed JSON.
  add_test(NAME lint-perf-table COMMAND ${PMEMZ_PYTHON3} ${_src}/scripts/perf-table --check)
  list(APPEND _doc_tests lint-perf-table)
  add_test(NAME lint-doc-checks-selftest
    COMMAND ${PMEMZ_PYTHON3} ${PMEMZ_TEST_SRC}/lint/doc-checks-selftest.py ${_src}
            ${PROJECT_BINARY_DIR})
  if(TARGET pmemzctl)
    add_test(NAME lint-doc-cli
      COMMAND ${_doc} cli --man ${_src}/docs/pmemzctl.1 --pmemzctl $<TARGET_FILE:pmemzctl>)
    list(APPEND _doc_tests lint-doc-cli)
  endif()
  if(TARGET nbdkit-pmemz-plugin)
    add_test(NAME lint-doc-plugin
      COMMAND ${_doc} plugin --pod ${_src}/client/nbdkit/nbdkit-pmemz-plugin.pod
              --plugin $<TARGET_FILE:nbdkit-pmemz-plugin>)
    list(APPEND _doc_tests lint-doc-plugin)
  endif()
  set_tests_properties(${_doc_tests} PROPERTIES LABELS "lint" SKIP_RETURN_CODE 77)
endif()
