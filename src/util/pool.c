#define _GNU_SOURCE
#include "util/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct pool_job {
	size_t n;
	atomic_size_t next;
	tt_pool_fn fn;
	void *ud;
};

static void *pool_worker(void *arg)
{
	struct pool_job *job = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&job->next, 1);
		if (i >= job->n)
			break;
		job->fn(job->ud, i);
	}
	return NULL;
}

static int default_threads;
static pthread_once_t default_threads_once = PTHREAD_ONCE_INIT;

/* The CPUs this process may run on (taskset, a cgroup's cpuset), which is
 * one system call; sysconf's count of online CPUs opens and reads a file
 * under /sys, and counts CPUs the process may not use. Once per process. */
static void find_default_threads(void)
{
	const char *env = getenv("TETHER_THREADS");
	int t = env && *env ? atoi(env) : 0;
	cpu_set_t set;
	if (t <= 0 && sched_getaffinity(0, sizeof set, &set) == 0)
		t = CPU_COUNT(&set);
	if (t <= 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		t = cpus > 0 ? (int)cpus : 1;
	}
	default_threads = t > 256 ? 256 : t;
}

int tt_pool_default_threads(void)
{
	pthread_once(&default_threads_once, find_default_threads);
	return default_threads;
}

void tt_pool_run(size_t n, int threads, tt_pool_fn fn, void *ud)
{
	if (threads <= 0)
		threads = tt_pool_default_threads();
	if ((size_t)threads > n)
		threads = (int)n;
	struct pool_job job = {.n = n, .fn = fn, .ud = ud};
	atomic_init(&job.next, 0);
	if (threads <= 1) {
		pool_worker(&job);
		return;
	}
	pthread_t *tids = calloc((size_t)threads - 1, sizeof *tids);
	int started = 0;
	for (int t = 0; tids && t < threads - 1; t++) {
		if (pthread_create(&tids[t], NULL, pool_worker, &job) != 0)
			break;
		started++;
	}
	/* The calling thread works too; if no thread could start it does all. */
	pool_worker(&job);
	for (int t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	free(tids);
}
