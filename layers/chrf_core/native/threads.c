/*
 * The kernel's one pool of threads: a schedule's tasks taken and run on several threads, the calling one included,
 * which alone asks the caller's pause (kernel.h's convention). Two schedules run on it: corpus_ids.c's wavefront
 * of stages, and jobs (parallel_jobs: the sets of an MBR batch, and the chunks of rows pairwise.c and aggregate.c
 * score on, parallel_rows). No Python here.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c99 */

#include "mbr.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IDLE_NANOSECONDS 20000000L /* how often the calling thread pauses while it waits for a task */
#define IDLE_SPINS 256             /* looks for a task (yielding between) before a thread sleeps */

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a task ended, or the pool stops */
    int stop;               /* 1: the pause said stop; -1: a task failed */
    const Schedule *schedule;
    void *shared;
    Pause pause;
    void *context;
    struct timespec paused_at;
} Pool;

typedef struct {
    Pool *pool;
    int worker;
} Seat;

static void stop(Pool *pool, int why) {
    if (why != 0 && pool->stop >= 0) pool->stop = why;
}

/* While it waits, the calling thread asks the pause every IDLE_NANOSECONDS (the lock released meanwhile). */
static void wait_for_task(Pool *pool, int worker) {
    if (worker != 0 || pool->pause == NULL) {
        pthread_cond_wait(&pool->changed, &pool->lock);
        return;
    }
    struct timespec until = pool->paused_at;
    until.tv_nsec += IDLE_NANOSECONDS;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (pthread_cond_timedwait(&pool->changed, &pool->lock, &until) != ETIMEDOUT) return;
    clock_gettime(CLOCK_REALTIME, &pool->paused_at);
    pthread_mutex_unlock(&pool->lock);
    const int said = pool->pause(pool->context);
    pthread_mutex_lock(&pool->lock);
    if (said) {
        stop(pool, 1);
        pthread_cond_broadcast(&pool->changed);
    }
}

/* Take and run tasks until the schedule has none left or the pool stops. */
static void *work(void *argument) {
    Seat *seat = argument;
    Pool *pool = seat->pool;
    const Schedule *schedule = pool->schedule;
    int spins = 0;
    Task task;
    pthread_mutex_lock(&pool->lock);
    while (pool->stop == 0) {
        const int taken = schedule->take(pool->shared, seat->worker, &task);
        if (taken < 0) break;
        if (taken == 0) {
            if (spins++ < IDLE_SPINS) { /* a task is about to end: an idle processor is slow to wake */
                pthread_mutex_unlock(&pool->lock);
                sched_yield();
                pthread_mutex_lock(&pool->lock);
            } else {
                wait_for_task(pool, seat->worker);
            }
            continue;
        }
        spins = 0;
        pthread_mutex_unlock(&pool->lock);
        const int status = schedule->run(pool->shared, seat->worker, &task);
        pthread_mutex_lock(&pool->lock);
        if (schedule->finish != NULL) {
            schedule->finish(pool->shared, &task);
            pthread_cond_broadcast(&pool->changed);
        }
        stop(pool, status);
    }
    pthread_cond_broadcast(&pool->changed); /* the others, waiting, see the stop or the end */
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

/* One thread: the tasks in turn, without a lock (a task that cannot be taken now never could be: none is running). */
static int run_alone(const Schedule *schedule, void *shared) {
    int status = 0;
    Task task;
    while (status == 0 && schedule->take(shared, 0, &task) > 0) {
        status = schedule->run(shared, 0, &task);
        if (schedule->finish != NULL) schedule->finish(shared, &task);
    }
    return status;
}

int run_pool(int threads, const Schedule *schedule, void *shared, Pause pause, void *context) {
    if (threads <= 1) return run_alone(schedule, shared);
    Pool pool;
    memset(&pool, 0, sizeof pool);
    if (pthread_mutex_init(&pool.lock, NULL) != 0) return -1;
    if (pthread_cond_init(&pool.changed, NULL) != 0) {
        pthread_mutex_destroy(&pool.lock);
        return -1;
    }
    pool.schedule = schedule;
    pool.shared = shared;
    pool.pause = pause;
    pool.context = context;
    clock_gettime(CLOCK_REALTIME, &pool.paused_at);
    pthread_t ids[MAX_THREADS];
    Seat seats[MAX_THREADS];
    int started = 0;
    threads = threads_for(threads, MAX_THREADS);
    for (int w = 1; w < threads; w++) {
        seats[w] = (Seat){&pool, w};
        if (pthread_create(&ids[started], NULL, work, &seats[w]) != 0) break; /* fewer threads then */
        started++;
    }
    seats[0] = (Seat){&pool, 0};
    work(&seats[0]);
    for (int k = 0; k < started; k++) pthread_join(ids[k], NULL);
    pthread_cond_destroy(&pool.changed);
    pthread_mutex_destroy(&pool.lock);
    return pool.stop;
}

/* A batch's jobs, one at a time to whichever thread is free: the schedule of parallel_jobs. A job may run long, so
   each is given a pause of its own: on the calling thread, the caller's; on the others, whether it has said stop. */
typedef struct Jobs Jobs;

typedef struct {
    Jobs *jobs;
    int worker;
} JobSeat;

struct Jobs {
    size_t next, count;
    JobTask task;
    void *shared;
    Pause pause;
    void *context;
    pthread_mutex_t lock; /* guards stopping */
    int stopping;         /* the caller's pause said stop: every job stops at its next pause */
    JobSeat seats[MAX_THREADS];
};

static int job_pause(void *context) {
    JobSeat *seat = context;
    Jobs *jobs = seat->jobs;
    const int caller = seat->worker == 0; /* the only one that sets stopping: it need not read it */
    if (caller && (jobs->pause == NULL || !jobs->pause(jobs->context))) return 0;
    pthread_mutex_lock(&jobs->lock);
    if (caller) jobs->stopping = 1;
    const int stopping = jobs->stopping;
    pthread_mutex_unlock(&jobs->lock);
    return stopping;
}

static int take_job(void *shared, int worker, Task *task) {
    Jobs *jobs = shared;
    (void)worker;
    if (jobs->next >= jobs->count) return -1;
    task->from = jobs->next++;
    return 1;
}

static int run_job(void *shared, int worker, const Task *task) {
    Jobs *jobs = shared;
    return jobs->task(jobs->shared, task->from, worker, job_pause, &jobs->seats[worker]);
}

static const Schedule JOBS = {take_job, run_job, NULL};

int parallel_jobs(size_t count, int threads, JobTask task, void *shared, Pause pause, void *context) {
    if (threads_for(threads, count) == 1) { /* in turn on the calling thread, each asking the caller's pause */
        int status = 0;
        for (size_t job = 0; status == 0 && job < count; job++) status = task(shared, job, 0, pause, context);
        return status;
    }
    Jobs *jobs = malloc(sizeof(Jobs));
    if (jobs == NULL) return -1;
    *jobs = (Jobs){0, count, task, shared, pause, context, PTHREAD_MUTEX_INITIALIZER, 0, {{NULL, 0}}};
    for (int w = 0; w < MAX_THREADS; w++) jobs->seats[w] = (JobSeat){jobs, w};
    const int status = run_pool(threads_for(threads, count), &JOBS, jobs, job_pause, &jobs->seats[0]);
    pthread_mutex_destroy(&jobs->lock);
    free(jobs);
    return status;
}

/* Rows in chunks, a chunk a job: each chunk's rows, then its pause. */
typedef struct {
    size_t rows, chunk;
    RowsTask task;
    void *shared;
} Rows;

static int run_chunk(void *shared, size_t job, int worker, Pause pause, void *context) {
    const Rows *rows = shared;
    const size_t from = job * rows->chunk, to = rows->rows - from > rows->chunk ? from + rows->chunk : rows->rows;
    if (rows->task(rows->shared, worker, from, to) < 0) return -1;
    return pause != NULL && pause(context) ? 1 : 0;
}

int parallel_rows(size_t rows, size_t chunk, int threads, RowsTask task, void *shared, Pause pause, void *context) {
    Rows chunks = {rows, chunk ? chunk : 1, task, shared};
    return parallel_jobs((rows + chunks.chunk - 1) / chunks.chunk, threads, run_chunk, &chunks, pause, context);
}
