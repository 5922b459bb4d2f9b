/* SPDX-License-Identifier: MIT */
#include "bench.h"
int scenario_alloc(struct bench_env *e) { (void)e; return 0; }
int scenario_throughput(struct bench_env *e) { (void)e; return 0; }
