/*
 * What pairwise.c and aggregate.c share once the corpus is built (corpus_ids.c): a text's distinct n-grams, each
 * thread's scratch, and the threads that score rows of texts against others (no Python here).
 */
#include "mbr.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void corpus_free(Corpus *corpus) {
    for (int kind = 0; kind < 2; kind++) {
        free(corpus->unit_start[kind]);
        free(corpus->units[kind]);
        free(corpus->classes[kind]);
    }
    free(corpus->column_counts);
    free(corpus->totals);
    memset(corpus, 0, sizeof *corpus);
}

int pause_now(size_t done, size_t *next, Pause pause, void *context) {
    if (done < *next) return 0;
    *next = done + POLL_MASK + 1;
    return pause != NULL && pause(context);
}

size_t distinct_ngrams(const Corpus *corpus, size_t t, int char_order, int orders, uint32_t mark, uint32_t *seen,
                       uint32_t *where, Posting *entries) {
    const size_t *base = corpus->base;
    size_t distinct = 0;
    for (int o = 0; o < orders; o++) {
        int kind = o >= char_order, n = kind ? o - char_order + 1 : o + 1;
        const uint32_t *ids = corpus->classes[kind] + (size_t)(n - 1) * corpus->stride[kind];
        const size_t from = corpus->unit_start[kind][t], to = corpus->unit_start[kind][t + 1];
        for (size_t i = from; i + (size_t)(n - 1) < to; i++) {
            size_t row = base[o] + ids[i];
            if (seen[row] != mark) {
                seen[row] = mark;
                where[row] = (uint32_t)distinct;
                entries[distinct].reference = (uint32_t)row;
                entries[distinct++].count = 0;
            }
            entries[where[row]].count++;
        }
    }
    return distinct;
}


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

int run_begin(Run *run, const Texts *texts, const Scoring *scoring, int threads, int count_columns, size_t matches,
              Pause pause, void *context) {
    memset(run, 0, sizeof *run);
    run->threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    if ((size_t)run->threads > texts->rows) run->threads = texts->rows ? (int)texts->rows : 1; /* no idle scratch */
    const int built = corpus_build(&run->corpus, texts, scoring, run->threads, count_columns, pause, context);
    if (built != 0) return built;
    const int orders = scoring->char_order + scoring->word_order;
    const size_t all = run->corpus.base[orders];
    for (int w = 0; w < run->threads; w++) {
        Scratch *s = &run->scratch[w];
        s->matches = matches ? malloc(matches * sizeof(uint32_t)) : NULL;
        s->seen = malloc((all + 1) * sizeof(uint32_t));
        s->where = malloc((all + 1) * sizeof(uint32_t));
        s->entries = malloc((run->corpus.longest + 1) * sizeof(Posting));
        s->values = malloc(3 * (size_t)orders * sizeof(double));
        if ((matches && !s->matches) || !s->seen || !s->where || !s->entries || !s->values) return -1;
        memset(s->seen, 0xFF, (all + 1) * sizeof(uint32_t));
    }
    return 0;
}

int run_end(Run *run, Flagged *flagged, int status) {
    for (int w = 0; w < run->threads; w++) {
        for (size_t k = 0; status == 0 && k < run->found[w].count; k++)
            if (flag(flagged, run->found[w].indices[k]) < 0) status = -1;
        free(run->found[w].indices);
        free(run->scratch[w].matches);
        free(run->scratch[w].seen);
        free(run->scratch[w].where);
        free(run->scratch[w].entries);
        free(run->scratch[w].values);
    }
    corpus_free(&run->corpus);
    return status;
}
