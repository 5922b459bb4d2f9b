# The shipped alert rules (etc/prometheus/pmemzerod-alerts.yml) under
# promtool's unit tests: each alert fires on the series it is for, at the
# time its 'for' says, with its labels and annotations, and stays quiet on
# a healthy region.  promtool is in Debian's prometheus package
# (scripts/deps); without it the test skips.
find_program(PMEMZ_PROMTOOL promtool)
set(_prom_dir ${CMAKE_CURRENT_BINARY_DIR}/prometheus)
add_test(NAME prometheus-alerts
  COMMAND sh -c "command -v \"$1\" >/dev/null || { echo 'SKIP: promtool not found (Debian: prometheus)'; exit 77; }
                 mkdir -p \"$2\" && cp \"$3\" \"$4\" \"$2/\" && cd \"$2\" &&
                 \"$1\" check rules pmemzerod-alerts.yml && \"$1\" test rules pmemzerod-alerts-test.yml"
          prometheus-alerts "${PMEMZ_PROMTOOL}" ${_prom_dir}
          ${PROJECT_SOURCE_DIR}/etc/prometheus/pmemzerod-alerts.yml
          ${PMEMZ_TEST_SRC}/prometheus/pmemzerod-alerts-test.yml)
set_tests_properties(prometheus-alerts PROPERTIES LABELS "unit" SKIP_RETURN_CODE 77)
