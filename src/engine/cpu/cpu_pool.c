#include "engine/cpu/cpu_pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct cpu_pool {
    int n;
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    unsigned long generation;
    int pending;
    bool quit;
    cpu_task_fn fn;
    void *arg;
};

typedef struct {
    cpu_pool *p;
    int tid;
} worker_arg;

static void *worker(void *a)
{
    worker_arg *wa = a;
    cpu_pool *p = wa->p;
    int tid = wa->tid;
    free(wa);
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->generation == seen && !p->quit) pthread_cond_wait(&p->start, &p->mu);
        if (p->quit) { pthread_mutex_unlock(&p->mu); return NULL; }
        seen = p->generation;
        cpu_task_fn fn = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->mu);
        fn(arg, tid, p->n);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
    }
}

eco_err cpu_pool_create(int nthreads, cpu_pool **out)
{
    if (nthreads < 1) nthreads = 1;
    cpu_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->th = calloc((size_t)nthreads, sizeof *p->th))) {
        free(p);
        return eco_fail(ECO_ENOMEM, "cpu backend: out of memory for the thread pool");
    }
    p->n = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int t = 1; t < nthreads; t++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) break;
        wa->p = p;
        wa->tid = t;
        if (pthread_create(&p->th[t], NULL, worker, wa)) { free(wa); break; }
        p->n++; /* tids stay dense: a failed create just leaves a smaller pool */
    }
    *out = p;
    return ECO_OK;
}

int cpu_pool_threads(const cpu_pool *p) { return p->n; }

void cpu_pool_run(cpu_pool *p, cpu_task_fn fn, void *arg)
{
    if (p->n == 1) { fn(arg, 0, 1); return; }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->pending = p->n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, p->n);
    pthread_mutex_lock(&p->mu);
    while (p->pending) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void cpu_pool_free(cpu_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int t = 1; t < p->n; t++) pthread_join(p->th[t], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    free(p->th);
    free(p);
}
