/* A fixed pool of worker threads for the CPU backend: one job at a time, every thread (the caller is
 * thread 0) runs fn(arg, tid, nthreads) and the call returns when all have finished. Threads persist so a
 * decode step pays a condition-variable wakeup per phase, not a pthread_create. */
#ifndef ECO_ENGINE_CPU_POOL_H
#define ECO_ENGINE_CPU_POOL_H

#include "eco/err.h"

typedef struct cpu_pool cpu_pool;
typedef void (*cpu_task_fn)(void *arg, int tid, int nthreads);

eco_err cpu_pool_create(int nthreads, cpu_pool **out);
int cpu_pool_threads(const cpu_pool *p);
void cpu_pool_run(cpu_pool *p, cpu_task_fn fn, void *arg);
void cpu_pool_free(cpu_pool *p);

#endif
