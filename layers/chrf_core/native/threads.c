/*
 * The row pool of MBR calls: a task run over rows in chunks on several threads, the calling one pausing (kernel.h's
 * convention) between its chunks. pairwise.c and aggregate.c score their rows on it. No Python here.
 */
#include "mbr.h"

#include <pthread.h>
#include <string.h>

typedef struct {
    pthread_mutex_t lock;
    size_t next, rows, chunk;
    int stop; /* 1: the pause said stop; -1: a task failed */
    RowsTask task;
    void *shared;
} Pool;

typedef struct {
    Pool *pool;
    int worker;
} Seat;

static int take(Pool *pool, size_t *from, size_t *to) {
    pthread_mutex_lock(&pool->lock);
    const int more = !pool->stop && pool->next < pool->rows;
    if (more) {
        *from = pool->next;
        *to = pool->rows - pool->next > pool->chunk ? pool->next + pool->chunk : pool->rows;
        pool->next = *to;
    }
    pthread_mutex_unlock(&pool->lock);
    return more;
}

static void stop(Pool *pool, int why) {
    pthread_mutex_lock(&pool->lock);
    if (pool->stop >= 0) pool->stop = why;
    pthread_mutex_unlock(&pool->lock);
}

static void *work_rows(void *argument) {
    Seat *seat = argument;
    size_t from, to;
    while (take(seat->pool, &from, &to))
        if (seat->pool->task(seat->pool->shared, seat->worker, from, to) < 0) stop(seat->pool, -1);
    return NULL;
}

int parallel_rows(size_t rows, size_t chunk, int threads, RowsTask task, void *shared, Pause pause, void *context) {
    Pool pool;
    memset(&pool, 0, sizeof pool);
    if (pthread_mutex_init(&pool.lock, NULL) != 0) return -1;
    pool.rows = rows;
    pool.chunk = chunk ? chunk : 1;
    pool.task = task;
    pool.shared = shared;
    pthread_t ids[MAX_THREADS];
    Seat seats[MAX_THREADS];
    int started = 0;
    for (int w = 1; w < threads && w < MAX_THREADS && (size_t)w * pool.chunk < rows; w++) {
        seats[w] = (Seat){&pool, w};
        if (pthread_create(&ids[started], NULL, work_rows, &seats[w]) != 0) break; /* fewer threads then */
        started++;
    }
    size_t from, to;
    while (take(&pool, &from, &to)) {
        if (task(shared, 0, from, to) < 0) stop(&pool, -1);
        else if (pause != NULL && pause(context)) stop(&pool, 1);
    }
    for (int k = 0; k < started; k++) pthread_join(ids[k], NULL);
    pthread_mutex_destroy(&pool.lock);
    return pool.stop;
}
