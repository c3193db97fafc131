/* Minimum Bayes risk decoding: many texts scored against many (pairwise.c, aggregate.c), from every text's n-grams
   counted once (corpus_ids.c builds the corpus, corpus.c begins and ends a run), with scores in double-double
   arithmetic (scores.c), on the one pool of threads (threads.c). No Python here. */
#ifndef CHRF_MBR_H
#define CHRF_MBR_H

#include "double2.h"
#include "kernel.h"

#define MAX_THREADS 256

typedef struct {
    int char_order, word_order, keep_whitespace, per_order_f;
    double beta_squared;
    double tolerance; /* a score this close (relative) to a rounding midpoint is flagged for exact computation */
} Scoring;

/* The texts: rows hypotheses then columns references, text t's code points at points[start[t]..start[t + 1]); with
   `same`, the references are the hypotheses and only the rows' texts are there. */
typedef struct {
    const uint32_t *points;
    const size_t *start;
    size_t rows, columns;
    int same;
} Texts;

/* Indices whose rounding could not be decided, to be computed exactly by the caller. */
typedef struct {
    size_t *indices;
    size_t count, capacity;
} Flagged;

/* With weights, their exact values (each an integer of `limbs` 32-bit words, least significant first, one per
   reference: the weights scaled by one power of two), for the flagged hypotheses' exact counts: aggregate_scores
   fills `counts` (malloc'd, the caller's to free) with `count` rows, one per flagged index in Flagged's order, each
   3 x orders integers of `width` words (limbs + 4): W x the hypothesis' n-grams, the references' weighted n-grams,
   matches. */
typedef struct {
    const uint32_t *weights;
    int limbs, width;
    uint32_t *counts;
    size_t count;
} ExactCounts;

/* A Pause (kernel.h) is asked on the calling thread: while the texts' n-grams are counted and indexed, about every
   2^20 units, then about every 2^18 pairs scored. */

/* Fill scores[i * columns + j] for every pair, each the score rounded to the nearest double. Returns 0; 1 when the
   pause said stop; -1 when out of memory. flagged->indices is the caller's to free (free()). */
int pairwise_scores(const Texts *texts, const Scoring *scoring, int threads, double *scores, Flagged *flagged,
                    Keep *keep, Pause pause, void *context);

/* Each hypothesis against the references' n-gram counts summed: with R references, per order, matches is the sum
   over n-grams g of min(R h_g, S_g), the hypothesis' n-grams R h and the references' all of theirs. Fills scores[i]
   (rounded to the nearest double) and counts[i * 3 * orders + 3 * o + {0, 1, 2}] (R h, references' n-grams,
   matches). With `weights` (one per reference, else NULL) the counts are weighted instead (aggregate.c) and only
   the scores are filled; with `exact` too (else NULL), the flagged hypotheses' exact counts. Returns as
   pairwise_scores does. Both take their big buffers from `keep` (kernel.h; NULL: malloc's) and give them back. */
int aggregate_scores(const Texts *texts, const Scoring *scoring, const Double2 *weights, ExactCounts *exact,
                     int threads, double *scores, int64_t *counts, Flagged *flagged, Keep *keep, Pause pause,
                     void *context);

/* ---- shared by both (corpus_ids.c, corpus.c, scores.c) ---- */


/* A score (0..100) from per-order n-gram totals and matches, as the contract defines it, in double-double. */
Double2 chrf_score(const Scoring *scoring, int orders, const double *hyp, const double *ref, const double *matches);
/* The same from counts that are themselves double-double values (weighted counts, not integers); with the
   reciprocals of the hypothesis' and the reference's counts per order (else NULL) it multiplies instead of dividing. */
Double2 chrf_score_of(const Scoring *scoring, int orders, const Double2 *hyp, const Double2 *ref,
                      const Double2 *matches, const Double2 *hyp_inverse, const Double2 *ref_inverse);
/* 1 / count in double-double (relative error about 2^-105); 0 for 0. */
Double2 reciprocal(double count);
/* Whether rounding value.hi may differ from rounding the exact value, which lies within hi * tolerance of it. */
int near_midpoint(Double2 value, double tolerance);
/* Append an index to flagged: 0, or -1 when out of memory. */
int flag(Flagged *flagged, size_t index);

/* Every counted text's units and per-order class ids: equal n-grams of any two texts share an id. The counted texts
   are the rows then the columns, or the rows alone when the columns are the same texts (then first_column is 0):
   column j is text first_column + j. */
typedef struct {
    size_t texts, first_column;
    size_t *unit_start[2]; /* [characters, words]: texts + 1 offsets into units and classes */
    uint32_t *units[2];
    uint32_t *classes[2]; /* per kind: order-major, order o's ids at classes + o * stride */
    size_t stride[2];
    uint32_t class_count[2][MAX_ORDERS];
    size_t base[MAX_ORDERS + 1]; /* rows of all orders: order o's class c is row base[o] + c, base[orders] rows */
    uint32_t *column_counts;     /* if asked for, per row: its occurrences in all the columns */
    uint32_t *totals;            /* texts x orders: each text's n-grams of each order */
    size_t longest;              /* the most n-grams of all orders in one text */
    int orders[2];               /* character and word orders */
    Keep *keep;                  /* where its buffers come from and go back to */
} Corpus;

/* Order o of a corpus (its character orders first, then its word orders): its kind (0 characters, 1 words), its n,
   and its n-grams' class ids (one per unit of every text; an n-gram's id where it starts). */
static inline int order_kind(const Corpus *corpus, int o) { return o >= corpus->orders[0]; }
static inline int order_n(const Corpus *corpus, int o) {
    return o >= corpus->orders[0] ? o - corpus->orders[0] + 1 : o + 1;
}
static inline const uint32_t *order_ids(const Corpus *corpus, int o) {
    const int kind = order_kind(corpus, o);
    return corpus->classes[kind] + (size_t)(order_n(corpus, o) - 1) * corpus->stride[kind];
}

/* The corpus of texts (rows, columns), built on up to `threads` threads (corpus_ids.c), with column_counts if
   count_columns, its buffers from `keep`. 0; 1 when the pause said stop; -1 when out of memory (corpus_free in any
   case). */
int corpus_build(Corpus *corpus, const Texts *texts, const Scoring *scoring, int threads, int count_columns,
                 Keep *keep, Pause pause, void *context);
void corpus_free(Corpus *corpus);

/* A text's occurrences of one row (order and class): its count, and which text or row it stands for. */
typedef struct {
    uint32_t reference, count;
} Posting;

/* Text t's distinct n-grams of every order into entries, as (row, count); seen/where are per-row scratch (seen must
   not hold `mark` beforehand). Their number. */
size_t distinct_ngrams(const Corpus *corpus, size_t t, int orders, uint32_t mark, uint32_t *seen,
                       uint32_t *where, Posting *entries);

/* One thread's scratch: per row of the corpus (seen, where), per n-gram of a text (entries), one pair's
   3 x orders counts as doubles (values), and for pairwise one hypothesis' matches against every reference. */
typedef struct {
    uint32_t *matches, *seen, *where;
    Posting *entries;
    double *values;
} Scratch;

/* What an MBR call holds: the corpus, and each thread's scratch and flagged indices. */
typedef struct {
    Corpus corpus;
    int threads;
    size_t matches; /* per thread's scratch */
    Scratch scratch[MAX_THREADS];
    Flagged found[MAX_THREADS];
} Run;

/* Count the texts' n-grams (with column counts if count_columns) and reserve scratch for `threads` threads (clamped
   to 1..MAX_THREADS and to the rows; matches: how many per thread, 0 for none), seen cleared. 0; 1 when the pause
   said stop; -1 when out of memory; run_end in any case. Buffers from `keep`, given back by run_end. */
int run_begin(Run *run, const Texts *texts, const Scoring *scoring, int threads, int count_columns, size_t matches,
              Keep *keep, Pause pause, void *context);
/* The threads' flagged indices appended to `flagged` while status is 0 (out of memory makes it -1), everything
   freed; the status. */
int run_end(Run *run, Flagged *flagged, int status);

/* The one thread-count rule: the threads asked for, at least 1, at most MAX_THREADS and at most one per task (a
   thread without a task would only wait). */
static inline int threads_for(int asked, size_t tasks) {
    const size_t most = tasks < MAX_THREADS ? (tasks ? tasks : 1) : MAX_THREADS;
    return asked < 1 ? 1 : (size_t)asked > most ? (int)most : asked;
}

/* A task of a schedule: job `from` (parallel_jobs), or a stage (`lane`) over its chunk `from` (corpus_ids.c). */
typedef struct {
    size_t from, to;
    int lane;
} Task;

/* What the pool runs. `take`, under the pool's lock, gives worker `worker` a task (1), none yet (0: the worker waits
   until a task ends) or says there are no more (-1); `run` runs it outside the lock: 0; 1 when the pause said stop;
   -1 when it failed; `finish` (or NULL) records its end, under the lock again. */
typedef struct {
    int (*take)(void *shared, int worker, Task *task);
    int (*run)(void *shared, int worker, const Task *task);
    void (*finish)(void *shared, const Task *task);
} Schedule;

/* The kernel's one pool: a schedule's tasks on `threads` threads (clamped to MAX_THREADS), the calling one included,
   which alone asks `pause`, while it waits for a task. 0; 1 when a task or the pause said stop; -1 when a task
   failed. */
int run_pool(int threads, const Schedule *schedule, void *shared, Pause pause, void *context);

/* Rows [from, to) of a task, on worker `worker` (0 .. threads - 1): 0, or -1 when out of memory. */
typedef int (*RowsTask)(void *shared, int worker, size_t from, size_t to);

/* Run task over rows 0..rows-1 in chunks of `chunk` rows on the pool's `threads` threads, the calling one included:
   each chunk a job of parallel_jobs, its pause asked after it. 0; 1 when the pause said stop; -1 when a task
   failed. */
int parallel_rows(size_t rows, size_t chunk, int threads, RowsTask task, void *shared, Pause pause, void *context);

/* Job `job`, on worker `worker` (0 .. threads - 1), given the pause it is to ask now and then: 0; 1 when the pause
   said stop; -1 when out of memory. */
typedef int (*JobTask)(void *shared, size_t job, int worker, Pause pause, void *context);

/* Run jobs 0..count-1 on the pool's `threads` threads, each job whole on the thread that takes it. A job on the
   calling thread asks `pause`; one on another thread, whether the calling thread's pause has said stop (so all stop
   within a pause of each other). 0; 1 when stopped; -1 when a job failed. */
int parallel_jobs(size_t count, int threads, JobTask task, void *shared, Pause pause, void *context);

#endif
