/*
 * Every text's units (code points, or word tokens interned by content across all texts) get a class id per order
 * from one table per order, (class at the order below, next unit) -> class, so equal n-grams of any two texts share
 * an id; and the threads that score rows of texts against others (no Python here).
 */
#include "mbr.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PARALLEL_UNITS 65536 /* units of a kind from which its class ids are given on several threads */

void corpus_free(Corpus *corpus) {
    for (int kind = 0; kind < 2; kind++) {
        block_free(corpus->unit_start[kind]);
        block_free(corpus->units[kind]);
        block_free(corpus->classes[kind]);
    }
    block_free(corpus->totals);
    memset(corpus, 0, sizeof *corpus);
}

/* One order's class ids for one kind on several threads: the texts in as many contiguous parts as threads, each
   part's pairs (class at the order below, next unit) given ids from a table of its own; then, in part order, each
   part's new pairs looked up in the first part's table, which makes every id what one table would have given, in
   order of first occurrence (the same as on one thread). A part maps its ids to those at the start of its next
   task. */
typedef struct {
    const Corpus *corpus;
    int kind, order;
    const size_t *bounds; /* parts + 1 text indices */
    const uint32_t *units;
    uint32_t *classes; /* order-major class ids of this kind */
    size_t total;
    Work *works;     /* per part: its pair table (part 0's holds the ids) */
    uint32_t **keys; /* per part but 0: its pairs, two values each, in order of its ids */
    uint32_t **maps; /* per part but 0: its ids -> part 0's */
    uint32_t *created;
    int stopped; /* the pause said stop (only the calling thread asks it) */
    Pause pause;
    void *context;
} Interning;

/* The ids of texts [from, to) at order index o (the positions with an n-gram of that order) through map. */
static void remap(uint32_t *ids, const size_t *start, size_t from, size_t to, uint32_t o, const uint32_t *map) {
    for (size_t t = from; t < to; t++)
        for (size_t i = start[t]; i + o < start[t + 1]; i++) ids[i] = map[ids[i]];
}

/* Part p: its previous order's ids mapped (when not the first part), then this order's given. */
static int intern_part(void *shared, int worker, size_t from, size_t to) {
    Interning *in = shared;
    const size_t *start = in->corpus->unit_start[in->kind];
    const uint32_t o = (uint32_t)in->order;
    for (size_t p = from; p < to; p++) {
        Work *work = &in->works[p];
        work->interrupted = worker == 0 ? in->pause : NULL;
        work->interrupted_context = in->context;
        const size_t first = start[in->bounds[p]], last = start[in->bounds[p + 1]];
        uint32_t *now = in->classes + (size_t)o * in->total;
        const uint32_t *below = o ? now - in->total : NULL;
        if (p > 0 && o > 0) /* the positions that have an n-gram of the order below */
            remap(in->classes + (size_t)(o - 1) * in->total, start, in->bounds[p], in->bounds[p + 1], o - 1,
                  in->maps[p]);
        if (p > 0) table_generation(work, last - first);
        uint32_t ids = p == 0 ? in->created[0] : 0;
        size_t done = 0;
        for (size_t t = in->bounds[p]; t < in->bounds[p + 1]; t++) {
            for (size_t i = start[t]; i + o < start[t + 1]; i++) {
                if (poll(work, done++)) {
                    in->stopped = 1;
                    return 0;
                }
                const uint32_t pair[2] = {o ? below[i] : NO_CLASS, in->units[i + o]}, before = ids;
                now[i] = intern_pair(work, pair[0], pair[1], &ids);
                if (p > 0 && ids != before) memcpy(in->keys[p] + 2 * (size_t)before, pair, sizeof pair);
            }
        }
        in->created[p] = ids;
    }
    return 0;
}

/* The class ids of orders 1..orders of one kind's units (corpus->classes[kind]), on `threads` threads when there
   are enough units. 0; 1 when the pause said stop; -1 on failure (no memory). */
static int give_ids(Corpus *corpus, int kind, int orders, int threads, Pause pause, void *context) {
    const size_t texts = corpus->texts, *start = corpus->unit_start[kind], total = start[texts];
    size_t parts = threads > 1 && total >= PARALLEL_UNITS ? (size_t)threads : 1;
    if (parts > texts) parts = texts ? texts : 1;
    size_t *bounds = calloc(parts + 1, sizeof(size_t));
    Work *works = calloc(parts, sizeof(Work));
    uint32_t **keys = calloc(parts, sizeof(uint32_t *)), **maps = calloc(parts, sizeof(uint32_t *));
    uint32_t *created = calloc(parts, sizeof(uint32_t));
    int status = bounds == NULL || works == NULL || keys == NULL || maps == NULL || created == NULL ? -1 : 0;
    for (size_t p = 1, t = 0; status == 0 && p <= parts; p++) { /* parts of about equal units */
        while (t < texts && (p == parts || start[t] < total / parts * p)) t++;
        bounds[p] = t;
    }
    for (size_t p = 1; status == 0 && p < parts; p++) {
        const size_t units = start[bounds[p + 1]] - start[bounds[p]] + 1;
        if ((keys[p] = block_alloc(2 * units * sizeof(uint32_t), 0)) == NULL ||
            (maps[p] = block_alloc(units * sizeof(uint32_t), 0)) == NULL || table_reserve(&works[p], units) < 0)
            status = -1;
    }
    if (status == 0 && table_reserve(&works[0], total) < 0) status = -1;
    Interning in = {corpus, kind, 0, bounds, corpus->units[kind], corpus->classes[kind], total, works, keys, maps,
                    created, 0, pause, context};
    for (int o = 0; o < orders && status == 0; o++) {
        in.order = o;
        created[0] = 0;
        table_generation(&works[0], total);
        status = parts > 1 ? parallel_rows(parts, 1, (int)parts, intern_part, &in, NULL, NULL)
                           : intern_part(&in, 0, 0, 1);
        if (status == 0 && in.stopped) status = 1;
        for (size_t p = 1; status == 0 && p < parts; p++) /* each part's new pairs, in part order, into part 0's */
            for (uint32_t id = 0; id < created[p]; id++)
                maps[p][id] = intern_pair(&works[0], keys[p][2 * (size_t)id], keys[p][2 * (size_t)id + 1], &created[0]);
        corpus->class_count[kind][o] = created[0];
    }
    for (size_t p = 1; status == 0 && orders > 0 && p < parts; p++) /* the last order's ids mapped */
        remap(corpus->classes[kind] + (size_t)(orders - 1) * total, start, bounds[p], bounds[p + 1],
              (uint32_t)orders - 1, maps[p]);
    for (size_t p = 0; works != NULL && p < parts; p++) {
        work_release(&works[p]);
        if (keys != NULL) block_free(keys[p]);
        if (maps != NULL) block_free(maps[p]);
    }
    free(bounds);
    free(works);
    free(keys);
    free(maps);
    free(created);
    return status;
}

/* Units of every text for one kind (0: characters, whitespace removed unless kept; 1: word tokens interned by
   content over all texts), then the class ids of orders 1..orders (give_ids). 0; 1 when the pause said stop; -1 on
   failure (no memory). */
static int corpus_classes(Corpus *corpus, const Texts *texts, int kind, int orders, int keep_whitespace,
                          int threads, Work *work) {
    const size_t points = texts->start[corpus->texts];
    corpus->unit_start[kind] = block_alloc((corpus->texts + 1) * sizeof(size_t), 1);
    corpus->units[kind] = block_alloc((points ? points : 1) * sizeof(uint32_t), 0);
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
    corpus->classes[kind] = block_alloc(((size_t)orders * total + 1) * sizeof(uint32_t), 0);
    if (corpus->classes[kind] == NULL) return -1;
    return give_ids(corpus, kind, orders, threads, work->interrupted, work->interrupted_context);
}

int pause_now(size_t done, size_t *next, Pause pause, void *context) {
    if (done < *next) return 0;
    *next = done + POLL_MASK + 1;
    return pause != NULL && pause(context);
}

int corpus_build(Corpus *corpus, const Texts *texts, const Scoring *scoring, int threads, Pause pause,
                 void *context) {
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
                                                    threads, &work)) != 0)
            goto done;
    status = -1;
    for (int o = 0; o < orders; o++) {
        int kind = o >= char_order, n = kind ? o - char_order + 1 : o + 1;
        corpus->base[o + 1] = corpus->base[o] + corpus->class_count[kind][n - 1];
    }
    corpus->totals = block_alloc((corpus->texts * (size_t)orders + 1) * sizeof(uint32_t), 1);
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
    const int built = corpus_build(&run->corpus, texts, scoring, run->threads, pause, context);
    if (built != 0) return built;
    const int orders = scoring->char_order + scoring->word_order;
    const size_t all = run->corpus.base[orders];
    for (int w = 0; w < run->threads; w++) {
        Scratch *s = &run->scratch[w];
        s->matches = matches ? block_alloc(matches * sizeof(uint32_t), 0) : NULL;
        s->seen = block_alloc((all + 1) * sizeof(uint32_t), 0);
        s->where = block_alloc((all + 1) * sizeof(uint32_t), 0);
        s->entries = block_alloc((run->corpus.longest + 1) * sizeof(Posting), 0);
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
        block_free(run->scratch[w].matches);
        block_free(run->scratch[w].seen);
        block_free(run->scratch[w].where);
        block_free(run->scratch[w].entries);
        free(run->scratch[w].values);
    }
    corpus_free(&run->corpus);
    return status;
}
