# compat-cut (compat-cut.c): built inside a baseline source tree, where
# tests/compat/make-images copies this file to tests/compat-cut/ and the
# baseline's tests/CMakeLists.txt includes it with its other fragments.
# Never part of this tree's own build: it is written against the storage
# API of the commit whose images it makes.
add_executable(compat-cut ${CMAKE_CURRENT_LIST_DIR}/compat-cut.c ${PMEMZ_TEST_SRC}/crash/pmsim.c)
target_include_directories(compat-cut PRIVATE ${PMEMZ_TEST_SRC}/crash)
target_link_libraries(compat-cut PRIVATE pmemzd_storage Threads::Threads)
target_link_options(compat-cut PRIVATE -Wl,--wrap=pstore_open -Wl,--wrap=pstore_badblocks)
