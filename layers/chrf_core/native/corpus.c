/*
 * Every text's units (code points, or word tokens interned by content across all texts) get a class id per order
 * from one table per order, (class at the order below, next unit) -> class, so equal n-grams of any two texts share
 * an id; and the threads that score rows of texts against others (no Python here).
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
    free(corpus->totals);
    memset(corpus, 0, sizeof *corpus);
}

/* Units of every text for one kind (0: characters, whitespace removed unless kept; 1: word tokens interned by
   content over all texts), then the class ids of orders 1..orders, each order from a fresh generation of work's
   pair table. 0; 1 when work's pause said stop; -1 on failure (no memory). */
static int corpus_classes(Corpus *corpus, const Texts *texts, int kind, int orders, int keep_whitespace,
                          Work *work) {
    const size_t points = texts->start[corpus->texts];
    corpus->unit_start[kind] = calloc(corpus->texts + 1, sizeof(size_t));
    corpus->units[kind] = malloc((points ? points : 1) * sizeof(uint32_t));
    if (corpus->unit_start[kind] == NULL || corpus->units[kind] == NULL) return -1;
    uint32_t *units = corpus->units[kind];
    size_t total = 0;
    uint32_t tokens = 0;
    if (kind == 1) {
        if (tokens_reserve(work, points / 2 + 34) < 0) return -1;
        tokens_generation(work, texts->points, points / 2 + 34);
    }
    size_t next_pause = 0;
    for (size_t t = 0; t < corpus->texts; t++) {
        const uint32_t *text = texts->points + texts->start[t];
        const size_t length = texts->start[t + 1] - texts->start[t];
        if (pause_now(texts->start[t], &next_pause, work->interrupted, work->interrupted_context)) return 1;
        if (kind == 0) {
            for (size_t i = 0; i < length; i++)
                if (keep_whitespace || !is_space(text[i])) units[total++] = text[i];
        } else {
            const size_t count = tokenize(work, text, length, units + total, &tokens);
            if (count == TOKENIZE_INTERRUPTED) return 1;
            total += count;
        }
        corpus->unit_start[kind][t + 1] = total;
    }
    corpus->classes[kind] = malloc(((size_t)orders * total + 1) * sizeof(uint32_t));
    if (corpus->classes[kind] == NULL || table_reserve(work, total) < 0) return -1;
    for (int o = 0; o < orders; o++) {
        table_generation(work, total);
        uint32_t *now = corpus->classes[kind] + (size_t)o * total, ids = 0;
        const uint32_t *below = o ? now - total : NULL;
        for (size_t t = 0; t < corpus->texts; t++) {
            const size_t from = corpus->unit_start[kind][t], to = corpus->unit_start[kind][t + 1];
            for (size_t i = from; i + (size_t)o < to; i++) {
                if (poll(work, i)) return 1;
                now[i] = intern_pair(work, o ? below[i] : NO_CLASS, units[i + o], &ids);
            }
        }
        corpus->class_count[kind][o] = ids;
    }
    return 0;
}

int pause_now(size_t done, size_t *next, Pause pause, void *context) {
    if (done < *next) return 0;
    *next = done + POLL_MASK + 1;
    return pause != NULL && pause(context);
}

int corpus_build(Corpus *corpus, const Texts *texts, const Scoring *scoring, Pause pause, void *context) {
    const int char_order = scoring->char_order, orders = scoring->char_order + scoring->word_order;
    memset(corpus, 0, sizeof *corpus);
    corpus->texts = texts->rows + texts->columns;
    Work work;
    memset(&work, 0, sizeof work);
    work.interrupted = pause;
    work.interrupted_context = context;
    const int kinds[2] = {char_order, scoring->word_order};
    int status = -1;
    for (int kind = 0; kind < 2; kind++)
        if (kinds[kind] && (status = corpus_classes(corpus, texts, kind, kinds[kind], scoring->keep_whitespace,
                                                    &work)) != 0)
            goto done;
    status = -1;
    for (int o = 0; o < orders; o++) {
        int kind = o >= char_order, n = kind ? o - char_order + 1 : o + 1;
        corpus->base[o + 1] = corpus->base[o] + corpus->class_count[kind][n - 1];
    }
    corpus->totals = calloc(corpus->texts * (size_t)orders + 1, sizeof(uint32_t));
    if (corpus->totals == NULL) goto done;
    for (size_t t = 0; t < corpus->texts; t++) {
        size_t ngrams = 0;
        for (int o = 0; o < orders; o++) {
            int kind = o >= char_order, n = kind ? o - char_order + 1 : o + 1;
            size_t length = corpus->unit_start[kind][t + 1] - corpus->unit_start[kind][t];
            corpus->totals[t * orders + o] = length >= (size_t)n ? (uint32_t)(length - n + 1) : 0;
            ngrams += corpus->totals[t * orders + o];
        }
        if (ngrams > corpus->longest) corpus->longest = ngrams;
    }
    status = 0;
done:
    work_release(&work);
    if (status != 0) corpus_free(corpus);
    return status;
}

size_t distinct_ngrams(const Corpus *corpus, size_t t, int char_order, int orders, uint32_t mark, uint32_t *seen,
                       uint32_t *where, Posting *entries) {
    const size_t *base = corpus->base;
    size_t distinct = 0;
    for (int o = 0; o < orders; o++) {
        int kind = o >= char_order, n = kind ? o - char_order + 1 : o + 1;
        const size_t total = corpus->unit_start[kind][corpus->texts];
        const uint32_t *ids = corpus->classes[kind] + (size_t)(n - 1) * total;
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

int run_begin(Run *run, const Texts *texts, const Scoring *scoring, int threads, size_t matches, Pause pause,
              void *context) {
    memset(run, 0, sizeof *run);
    run->threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    if ((size_t)run->threads > texts->rows) run->threads = texts->rows ? (int)texts->rows : 1; /* no idle scratch */
    const int built = corpus_build(&run->corpus, texts, scoring, pause, context);
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
