/*
 * The corpus of an MBR call: every text's units (code points, or word tokens interned by content) and its n-grams'
 * class ids per order, equal n-grams of any two texts sharing an id. Hypotheses identical to the references (MBR's
 * usual set-up: the samples are both) are counted once.
 *
 * Built as a wavefront on the kernel's pool of threads (threads.c; its schedule here: take_stage, run_stage,
 * finish_stage): each kind (characters, words) is a chain of stages, its units (stage 0) then orders 1, 2, ..., over
 * chunks of texts; stage s of chunk k runs once stage s of chunk k - 1 and stage s - 1 of chunk k are done. Each
 * order has a pair table of its own, (class below, unit) -> class, touched only by that order's stage, chunk after
 * chunk in text order: the ids are exactly one thread's, whatever the number of threads.
 * A class's next-order class comes from the kernel's one refinement step (classes.h: refine), whose memo of the
 * first continuation keeps near-identical texts (MBR samples) away from the table.
 * Only the calling thread pauses. No Python here.
 */
#include "classes.h"
#include "mbr.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_POINTS 8192u          /* code points per chunk of texts (at least one text) */
#define THREADED_CHUNKS 4           /* fewer chunks: one thread builds (starting threads would cost more) */
#define LONGEST_THREADED (1u << 20) /* a longer text: one thread, the caller's, which pauses within it */

/* One order's state, touched only by its stage, one chunk at a time. */
typedef struct {
    PairTable pairs; /* (class below, unit) -> class, growing */
    uint32_t *memo;  /* per class below, refine's memo: the unit its first member continued with (or NO_CLASS), and
                        the class that made */
    size_t memo_room;
    uint32_t ids; /* classes so far */
    uint32_t *counts; /* with column counts: per class, its occurrences in the column texts */
    size_t counts_room;
} Order;

typedef struct {
    Corpus *corpus;
    const Texts *texts;
    int orders[2], keep_whitespace, count_columns, threads;
    size_t chunks, *chunk_first; /* chunk k holds texts chunk_first[k] .. chunk_first[k + 1] - 1 */
    size_t cursor[2];            /* stage 0: units written so far */
    TokenTable tokens;           /* stage 0 of words: the token table */
    uint32_t token_ids;
    Order order[2][MAX_ORDERS];
    /* the schedule, under the pool's lock */
    size_t done[2][MAX_ORDERS + 1]; /* chunks each stage has done */
    int busy[2][MAX_ORDERS + 1];
    uint32_t published[2][MAX_ORDERS + 1]; /* an order's classes as of its last done chunk */
    uint32_t below[2][MAX_ORDERS + 1];     /* a running stage's: the classes below, as published when it was taken */
    size_t remaining;                      /* tasks not yet done */
    /* the calling thread's pauses */
    Pause pause;
    void *context;
    size_t units_done, next_pause;
} Build;

/* Room for `count` values in a growable array (from `keep`), new values filled with `fill` (0 or 0xFF bytes). 0 or
   -1. */
static int room_for(uint32_t **values, size_t *room, size_t count, int fill, Keep *keep) {
    if (count <= *room) return 0;
    size_t bigger = *room ? *room : 64;
    while (bigger < count) bigger *= 2;
    uint32_t *grown = keep_grow(keep, *values, *room * sizeof(uint32_t), bigger * sizeof(uint32_t));
    if (grown == NULL) return -1;
    memset(grown + *room, fill, (bigger - *room) * sizeof(uint32_t));
    *values = grown;
    *room = bigger;
    return 0;
}

/* The class of an n-gram of class `below` followed by `unit` that its memo does not hold: by the kernel's one
   refinement step (the order's table has room). Out of line: the loop below keeps the memo's hits in registers. */
static uint32_t class_looked_up(Order *order, uint32_t below, uint32_t unit) {
    return refine(order->memo + 2 * (size_t)below, &order->pairs, NULL, 0, 0, below, unit, &order->ids, 0, NULL);
}

/* Order n's classes of positions [from, to) into now: from the classes below (n > 1) or the units alone. */
static void classes_of(Order *order, const uint32_t *below, const uint32_t *units, uint32_t *now, size_t from,
                       size_t to) {
    if (below == NULL) {
        for (size_t i = from; i < to; i++) now[i] = pair_intern(&order->pairs, NO_CLASS, units[i], &order->ids);
        return;
    }
    const uint32_t *memo = order->memo;
    for (size_t i = from; i < to; i++) {
        const uint32_t c = below[i], unit = units[i], *mine = memo + 2 * (size_t)c;
        now[i] = mine[0] == unit ? mine[1] : class_looked_up(order, c, unit);
    }
}

/* Whether to stop: asked on the calling thread only, after about 2^20 units of its own. */
static int pause_within(Build *b, int worker, size_t units) {
    if (worker != 0 || b->pause == NULL) return 0;
    b->units_done += units;
    return pause_now(b->units_done, &b->next_pause, b->pause, b->context);
}

/* Stage 0 of a kind over chunk k: the texts' units. 0; 1 when the pause said stop. */
static int units_stage(Build *b, int kind, size_t k, int worker) {
    Corpus *corpus = b->corpus;
    const Texts *texts = b->texts;
    uint32_t *units = corpus->units[kind];
    for (size_t t = b->chunk_first[k]; t < b->chunk_first[k + 1]; t++) {
        const uint32_t *text = texts->points + texts->start[t];
        const size_t length = texts->start[t + 1] - texts->start[t];
        size_t total = b->cursor[kind];
        if (kind == 0) {
            total += counted_characters(units + total, text, length, b->keep_whitespace);
        } else {
            /* the tokenizer pauses only where one thread builds, the calling one */
            const size_t count = tokenize(&b->tokens, text, length, units + total, &b->token_ids,
                                          b->threads == 1 ? b->pause : NULL, b->context);
            if (count == TOKENIZE_INTERRUPTED) return 1;
            total += count;
        }
        corpus->unit_start[kind][t + 1] = b->cursor[kind] = total;
        if (pause_within(b, worker, length)) return 1;
    }
    return 0;
}

/* Order n of a kind over chunk k, whose classes below number at most below_ids. 0; 1 when the pause said stop; -1
   when out of memory. */
static int order_stage(Build *b, int kind, int n, size_t k, uint32_t below_ids, int worker) {
    Corpus *corpus = b->corpus;
    Order order = b->order[kind][n - 1]; /* a copy: the threads' orders share cache lines */
    const size_t stride = corpus->stride[kind];
    uint32_t *now = corpus->classes[kind] + (size_t)(n - 1) * stride;
    const uint32_t *below = n > 1 ? now - stride : NULL, *units = corpus->units[kind] + (n - 1);
    int status = n > 1 && room_for(&order.memo, &order.memo_room, 2 * (size_t)below_ids, 0xFF, corpus->keep) < 0
                     ? -1
                     : 0;
    for (size_t t = b->chunk_first[k]; status == 0 && t < b->chunk_first[k + 1]; t++) {
        const size_t from = corpus->unit_start[kind][t], to = corpus->unit_start[kind][t + 1];
        const int column = b->count_columns && t >= corpus->first_column;
        const size_t last = to - from >= (size_t)n ? to - (size_t)(n - 1) : from; /* n-grams start before it */
        for (size_t part = from; status == 0 && part < last; part += POLL_MASK + 1) { /* pausing within a text */
            const size_t end = last - part > POLL_MASK + 1 ? part + POLL_MASK + 1 : last;
            /* room for every key and class the part can make */
            if (pair_table_room(&order.pairs, end - part, corpus->keep) < 0 ||
                (b->count_columns && room_for(&order.counts, &order.counts_room, (size_t)order.ids + (end - part) + 1,
                                              0, corpus->keep) < 0)) {
                status = -1;
                break;
            }
            classes_of(&order, below, units, now, part, end);
            for (size_t i = part; column && i < end; i++) order.counts[now[i]]++;
            if (status == 0 && pause_within(b, worker, end - part)) status = 1;
        }
    }
    b->order[kind][n - 1] = order;
    return status;
}

/* A stage that can run now. The stages stand in one line (kind 0's units and orders, then kind 1's) and worker w
   takes the one nearest position w (all - 1) / (threads - 1): each order's table stays with one thread (in its
   cache) while the threads keep up with each other, and where they meet the stages go to whichever is free. */
static int runnable(const Build *b, int worker, int *kind, int *stage) {
    const int first[2] = {0, b->orders[0] ? b->orders[0] + 1 : 0};
    const int all = first[1] + (b->orders[1] ? b->orders[1] + 1 : 0);
    const int target = b->threads > 1 ? worker * (all - 1) / (b->threads - 1) : all - 1;
    int nearest = -1;
    for (int which = 0; which < 2; which++)
        for (int s = 0; b->orders[which] && s <= b->orders[which]; s++) {
            if (b->busy[which][s] || b->done[which][s] == b->chunks) continue;
            if (s > 0 && b->done[which][s - 1] <= b->done[which][s]) continue;
            const int distance = first[which] + s > target ? first[which] + s - target : target - first[which] - s;
            if (nearest < 0 || distance <= nearest) {
                nearest = distance;
                *kind = which;
                *stage = s;
            }
        }
    return nearest >= 0;
}

#define LANES (MAX_ORDERS + 1) /* a task's lane: kind * LANES + stage */

/* The wavefront's schedule (threads.c's pool, under its lock): a runnable stage's next chunk, once no stage is left
   -1. */
static int take_stage(void *shared, int worker, Task *task) {
    Build *b = shared;
    int kind, stage;
    if (b->remaining == 0) return -1;
    if (!runnable(b, worker, &kind, &stage)) return 0;
    b->busy[kind][stage] = 1;
    b->below[kind][stage] = stage > 1 ? b->published[kind][stage - 1] : 0;
    task->lane = kind * LANES + stage;
    task->from = b->done[kind][stage];
    task->to = task->from + 1;
    return 1;
}

static int run_stage(void *shared, int worker, const Task *task) {
    Build *b = shared;
    const int kind = task->lane / LANES, stage = task->lane % LANES;
    return stage == 0 ? units_stage(b, kind, task->from, worker)
                      : order_stage(b, kind, stage, task->from, b->below[kind][stage], worker);
}

static void finish_stage(void *shared, const Task *task) {
    Build *b = shared;
    const int kind = task->lane / LANES, stage = task->lane % LANES;
    b->busy[kind][stage] = 0;
    b->done[kind][stage]++;
    b->published[kind][stage] = stage > 0 ? b->order[kind][stage - 1].ids : 0;
    b->remaining--;
}

static const Schedule WAVEFRONT = {take_stage, run_stage, finish_stage};

/* Chunks of about CHUNK_POINTS code points, whole texts each; the longest text's length into *longest. */
static int chunk_texts(Build *b, size_t texts, size_t *longest) {
    const size_t *start = b->texts->start;
    b->chunk_first = keep_alloc(b->corpus->keep, (texts + 2) * sizeof(size_t), 0);
    if (b->chunk_first == NULL) return -1;
    b->chunks = 0;
    *longest = 0;
    for (size_t t = 0; t < texts; t++) {
        if (start[t + 1] - start[t] > *longest) *longest = start[t + 1] - start[t];
        if (t == 0 || start[t] - start[b->chunk_first[b->chunks - 1]] >= CHUNK_POINTS)
            b->chunk_first[b->chunks++] = t;
    }
    b->chunk_first[b->chunks] = texts;
    return 0;
}

/* Whether the references are the hypotheses, text for text. */
static int same_sides(const Texts *texts) {
    const size_t rows = texts->rows, *start = texts->start;
    if (texts->same) return 1;
    if (rows != texts->columns) return 0;
    for (size_t t = 0; t <= rows; t++)
        if (start[rows + t] - start[rows] != start[t]) return 0;
    return same_units(texts->points, start[rows], texts->points + start[rows], start[rows]);
}

/* The wavefront over the counted texts, on up to `threads` threads. 0; 1 when the pause said stop; -1 when out of
   memory. */
static int build_ids(Build *b, size_t counted, int threads) {
    size_t longest;
    if (chunk_texts(b, counted, &longest) < 0) return -1;
    if (b->chunks < THREADED_CHUNKS || longest > LONGEST_THREADED) threads = 1;
    const int stages = (b->orders[0] ? b->orders[0] + 1 : 0) + (b->orders[1] ? b->orders[1] + 1 : 0);
    b->threads = threads_for(threads, (size_t)stages); /* more would find no stage free */
    for (int kind = 0; kind < 2; kind++)
        if (b->orders[kind]) b->remaining += b->chunks * (size_t)(b->orders[kind] + 1);
    return run_pool(b->threads, &WAVEFRONT, b, b->pause, b->context);
}

/* After the ids: classes per order, rows, column counts per row, totals per text and the longest text's n-grams. */
static int corpus_rows(Corpus *corpus, Build *b, int orders) {
    for (int o = 0; o < orders; o++) {
        const int kind = order_kind(corpus, o), n = order_n(corpus, o);
        corpus->class_count[kind][n - 1] = b->order[kind][n - 1].ids;
        corpus->base[o + 1] = corpus->base[o] + b->order[kind][n - 1].ids;
    }
    if (b->count_columns) {
        corpus->column_counts = keep_alloc(corpus->keep, (corpus->base[orders] + 1) * sizeof(uint32_t), 0);
        if (corpus->column_counts == NULL) return -1;
        for (int o = 0; o < orders; o++) {
            const int kind = order_kind(corpus, o), n = order_n(corpus, o);
            const size_t classes = corpus->base[o + 1] - corpus->base[o];
            if (classes) memcpy(corpus->column_counts + corpus->base[o], b->order[kind][n - 1].counts,
                                classes * sizeof(uint32_t));
        }
    }
    corpus->totals = keep_alloc(corpus->keep, (corpus->texts * (size_t)orders + 1) * sizeof(uint32_t), 1);
    if (corpus->totals == NULL) return -1;
    for (size_t t = 0; t < corpus->texts; t++) {
        size_t ngrams = 0;
        for (int o = 0; o < orders; o++) {
            const int kind = order_kind(corpus, o), n = order_n(corpus, o);
            const size_t length = corpus->unit_start[kind][t + 1] - corpus->unit_start[kind][t];
            corpus->totals[t * orders + o] = (uint32_t)ngrams_in(length, n);
            ngrams += corpus->totals[t * orders + o];
        }
        if (ngrams > corpus->longest) corpus->longest = ngrams;
    }
    return 0;
}

int corpus_build(Corpus *corpus, const Texts *texts, const Scoring *scoring, int threads, int count_columns,
                 Keep *keep, Pause pause, void *context) {
    const int char_order = scoring->char_order, orders = scoring->char_order + scoring->word_order;
    memset(corpus, 0, sizeof *corpus);
    corpus->keep = keep;
    corpus->orders[0] = char_order;
    corpus->orders[1] = scoring->word_order;
    const int same = same_sides(texts);
    corpus->texts = same ? texts->rows : texts->rows + texts->columns;
    corpus->first_column = same ? 0 : texts->rows;
    const size_t points = texts->start[corpus->texts];
    Build *b = calloc(1, sizeof(Build));
    if (b == NULL) return -1;
    *b = (Build){.corpus = corpus, .texts = texts, .orders = {char_order, scoring->word_order},
                 .keep_whitespace = scoring->keep_whitespace, .count_columns = count_columns, .pause = pause,
                 .context = context};
    int status = -1;
    for (int kind = 0; kind < 2; kind++) {
        if (!b->orders[kind]) continue;
        corpus->stride[kind] = points;
        corpus->unit_start[kind] = keep_alloc(keep, (corpus->texts + 1) * sizeof(size_t), 1);
        corpus->units[kind] = keep_alloc(keep, (points + 1) * sizeof(uint32_t), 0);
        corpus->classes[kind] = keep_alloc(keep, ((size_t)b->orders[kind] * points + 1) * sizeof(uint32_t), 0);
        if (!corpus->unit_start[kind] || !corpus->units[kind] || !corpus->classes[kind]) goto done;
    }
    if (b->orders[1]) {
        const size_t tokens = distinct_tokens_bound(points, corpus->texts);
        if (tokens_reserve(&b->tokens, tokens) < 0) goto done;
        tokens_generation(&b->tokens, texts->points, tokens);
    }
    if ((status = build_ids(b, corpus->texts, threads)) == 0) status = corpus_rows(corpus, b, orders);
done:
    for (int kind = 0; kind < 2; kind++)
        for (int o = 0; o < MAX_ORDERS; o++) {
            const Order *order = &b->order[kind][o];
            keep_free(keep, order->pairs.slots, order->pairs.room * sizeof(Slot));
            keep_free(keep, order->memo, order->memo_room * sizeof(uint32_t));
            keep_free(keep, order->counts, order->counts_room * sizeof(uint32_t));
        }
    keep_free(keep, b->chunk_first, (corpus->texts + 2) * sizeof(size_t));
    free(b->tokens.slots);
    free(b);
    if (status != 0) corpus_free(corpus);
    return status;
}

void corpus_free(Corpus *corpus) {
    Keep *keep = corpus->keep;
    const int orders = corpus->orders[0] + corpus->orders[1];
    for (int kind = 0; kind < 2; kind++) {
        const size_t points = corpus->stride[kind];
        keep_free(keep, corpus->unit_start[kind], (corpus->texts + 1) * sizeof(size_t));
        keep_free(keep, corpus->units[kind], (points + 1) * sizeof(uint32_t));
        keep_free(keep, corpus->classes[kind], ((size_t)corpus->orders[kind] * points + 1) * sizeof(uint32_t));
    }
    keep_free(keep, corpus->column_counts, (corpus->base[orders] + 1) * sizeof(uint32_t));
    keep_free(keep, corpus->totals, (corpus->texts * (size_t)orders + 1) * sizeof(uint32_t));
    memset(corpus, 0, sizeof *corpus);
}
