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
