# Every version number an installed tree states is one of the two CMake
# has (check-versions.sh): the build is installed into a temporary DESTDIR
# and read back -- header, shared object, pkg-config, --version of the
# programs, man pages, the plugin -- and NEWS.md and the Kubernetes
# manifests' image tags say the project's.
# test-package.sh runs the same check on the .deb.
#
#   ctest -L version
#
# Not in a sanitizer build: the check runs uninstrumented programs (its own
# test program, nbdkit) that cannot load an instrumented library.
if(PMEMZ_SANITIZE OR PMEMZ_FUZZ)
  return()
endif()
add_test(NAME versions-install
  COMMAND bash ${PMEMZ_TEST_SRC}/package/check-versions.sh
    --project ${PROJECT_VERSION} --library ${PMEMZ_CLIENT_VERSION}
    --install ${PROJECT_BINARY_DIR} --source ${PROJECT_SOURCE_DIR})
set_tests_properties(versions-install PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "version")
