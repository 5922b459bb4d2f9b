# The Debian package: scripts/package builds the .deb in a build directory
# of its own (prefix /usr), and the test checks its files, control data,
# conffiles, the paths in its units and lintian's verdict; it also checks
# that cpack refuses this build directory when its prefix is not /usr.
# Nothing is installed on the host.
#
#   ctest -L package
#
# The sanitizer build would only repeat it (the package has its own build).
if(PMEMZ_SANITIZE)
  return()
endif()
add_test(NAME package-deb
  COMMAND ${PMEMZ_TEST_SRC}/package/test-package.sh ${PROJECT_SOURCE_DIR}
    ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/package)
set_tests_properties(package-deb PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 1200 LABELS "package"
  ENVIRONMENT "PMEMZ_WERROR=${PMEMZ_WERROR}")

# The examples installed with the library build from the package alone:
# cmake --install into a DESTDIR, then cc with pkg-config's flags.
add_test(NAME package-examples
  COMMAND sh ${PMEMZ_TEST_SRC}/package/test-examples.sh ${PROJECT_BINARY_DIR}
    ${CMAKE_C_COMPILER} ${CMAKE_CURRENT_BINARY_DIR}/examples)
set_tests_properties(package-examples PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "package")
