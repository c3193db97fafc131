/*
 * pairwise: every hypothesis against every reference, each text's n-grams counted once (no Python here).
 *
 * The references' distinct n-grams of each order become postings (row -> (reference, count)); a hypothesis then
 * walks the postings of its own distinct n-grams, adding min(its count, the reference's) to that reference's
 * matches. The cost is the texts' length times the orders, plus one step per n-gram two texts share (half of that
 * when the references are the hypotheses: see score_rows). Hypotheses are scored in chunks of rows on several
 * threads, each with its own scratch; every text's reciprocal counts are computed once, so a pair's score multiplies.
 * With few references (at most DENSE_COLUMNS, MBR's sets of samples), the n-grams most of them hold are also kept
 * dense, every reference's count side by side, and a hypothesis' n-gram adds to all its references in a few wide
 * operations instead of walking their postings one by one (score_rows_dense; 1.5x on sets of 16 to 64 samples).
 */
#include "mbr.h"

#include <stdlib.h>
#include <string.h>

#define PAIRS_PER_PAUSE ((POLL_MASK + 1) / 4) /* pairs scored between two pauses: a pair weighs about 4 units */

typedef struct {
    const Scoring *scoring;
    size_t rows, columns;
    int orders, same; /* same: the references are the hypotheses, counted once (corpus first_column 0) */
    const uint32_t *first;
    const Posting *postings;
    const Double2 *column_inverse; /* columns x orders: 1 / each reference's n-grams of each order */
    double *scores;
    Run *run;
    const uint32_t *dense_row; /* or NULL: dense_counts' */
    const int16_t *dense;
} Pairwise;

/* Hypothesis i against reference j from their matches per order: the score, flagged if its rounding is in doubt.
   0, or -1 when out of memory. */
static int score_pair(const Pairwise *p, int worker, size_t i, size_t j, const uint32_t *matches_of_pair,
                      const Double2 *hyp_inverse) {
    const Corpus *corpus = &p->run->corpus;
    const int orders = p->orders;
    const uint32_t *hyp_totals = corpus->totals + i * (size_t)orders;
    const uint32_t *ref_totals = corpus->totals + (corpus->first_column + j) * (size_t)orders;
    Double2 hyp[MAX_ORDERS], ref[MAX_ORDERS], matches[MAX_ORDERS];
    for (int o = 0; o < orders; o++) {
        hyp[o] = d2_of(hyp_totals[o]);
        ref[o] = d2_of(ref_totals[o]);
        matches[o] = d2_of(matches_of_pair[o]);
    }
    const Double2 value = chrf_score_of(p->scoring, orders, hyp, ref, matches, hyp_inverse,
                                        p->column_inverse + j * orders);
    p->scores[i * p->columns + j] = value.hi;
    if (near_midpoint(value, p->scoring->tolerance) && flag(&p->run->found[worker], i * p->columns + j) < 0) return -1;
    return 0;
}

/* The first of a row's postings whose reference is `column` or later (postings are in reference order): a short
   list walked (no mispredicted halving), a long one halved. */
static const Posting *postings_from(const Posting *posting, const Posting *end, uint32_t column) {
    if (end - posting <= 32) {
        while (posting < end && posting->reference < column) posting++;
        return posting;
    }
    while (posting < end) {
        const Posting *middle = posting + (end - posting) / 2;
        if (middle->reference < column) posting = middle + 1;
        else end = middle;
    }
    return posting;
}

/* Rows [from, to): each hypothesis' matches against the references that hold its n-grams, then its scores. When the
   references are the hypotheses, matches are symmetric: row i takes the references j >= i only and scores both
   (i, j) and (j, i), so the shared n-grams are walked once per pair instead of twice. */
static int score_rows(void *shared, int worker, size_t from, size_t to) {
    const Pairwise *p = shared;
    Scratch *s = &p->run->scratch[worker];
    const Corpus *corpus = &p->run->corpus;
    const int orders = p->orders;
    const size_t *base = corpus->base;
    for (size_t i = from; i < to; i++) {
        const size_t first_column = p->same ? i : 0;
        size_t distinct = distinct_ngrams(corpus, i, orders, (uint32_t)i, s->seen, s->where, s->entries);
        memset(s->matches + first_column * orders, 0, (p->columns - first_column) * (size_t)orders * sizeof(uint32_t));
        for (size_t e = 0; e < distinct; e++) {
            const size_t row = s->entries[e].reference;
            const uint32_t mine = s->entries[e].count;
            int o = 0;
            while (row >= base[o + 1]) o++;
            const Posting *end = p->postings + p->first[row + 1];
            const Posting *posting = p->postings + p->first[row];
            if (p->same) posting = postings_from(posting, end, (uint32_t)first_column);
            uint32_t *matches_of_order = s->matches + o;
            for (; posting < end; posting++)
                matches_of_order[(size_t)posting->reference * orders] += mine < posting->count ? mine : posting->count;
        }
        Double2 hyp_inverse[MAX_ORDERS];
        for (int o = 0; o < orders; o++) hyp_inverse[o] = reciprocal(corpus->totals[i * (size_t)orders + o]);
        for (size_t j = first_column; j < p->columns; j++) {
            const uint32_t *matches_of_pair = s->matches + j * orders;
            if (score_pair(p, worker, i, j, matches_of_pair, hyp_inverse) < 0) return -1;
            if (p->same && j != i &&
                score_pair(p, worker, j, i, matches_of_pair, p->column_inverse + j * orders) < 0)
                return -1;
        }
    }
    return 0;
}

#define DENSE_COLUMNS 64 /* references at most for dense counts */
#define DENSE_FEWEST 8   /* and at least (fewer: their postings are as short as a block is wide) */
#define LANES 16         /* dense counts' references padded to a multiple of it (a block the compiler makes wide) */
#define DENSE_MOST 32767 /* the most n-grams a text may have for dense counts: every count and sum is an int16_t */

/* References padded to LANES. */
static inline size_t padded(size_t columns) { return (columns + LANES - 1) / LANES * LANES; }

/* sums[j] += min(theirs[j], mine) for every reference j, LANES at a time (int16_t: the block is a few wide
   operations even on the baseline x86-64). */
static inline void add_clipped(int16_t *restrict sums, const int16_t *restrict theirs, int16_t mine,
                               size_t lanes) {
    for (size_t block = 0; block < lanes; block += LANES) {
        int16_t *to = sums + block;
        const int16_t *from = theirs + block;
        for (int k = 0; k < LANES; k++) to[k] = (int16_t)(to[k] + (from[k] < mine ? from[k] : mine));
    }
}

/* Rows [from, to) with dense counts (few references): a hypothesis n-gram whose row is dense adds min(its count,
   theirs) to every reference's matches at once, any other walks its postings, all of them (no triangle: every pair
   is scored from its own row); then the row's scores. Sums stay below DENSE_MOST: a hypothesis' matches of an order
   are at most its n-grams. */
static int score_rows_dense(void *shared, int worker, size_t from, size_t to) {
    const Pairwise *p = shared;
    Scratch *s = &p->run->scratch[worker];
    const Corpus *corpus = &p->run->corpus;
    const int orders = p->orders;
    const size_t columns = p->columns, lanes = padded(columns);
    int16_t *matches = (int16_t *)s->matches; /* order-major here: order o's at matches + o * lanes */
    for (size_t i = from; i < to; i++) {
        const size_t distinct = distinct_ngrams(corpus, i, orders, (uint32_t)i, s->seen,
                                                s->where, s->entries);
        memset(matches, 0, lanes * (size_t)orders * sizeof(int16_t));
        int o = 0;
        for (size_t e = 0; e < distinct; e++) {
            const size_t row = s->entries[e].reference;
            while (row >= corpus->base[o + 1]) o++;
            const uint32_t mine = s->entries[e].count, at = p->dense_row[row];
            int16_t *sums = matches + (size_t)o * lanes;
            if (at != NO_CLASS) {
                add_clipped(sums, p->dense + (size_t)at * lanes, (int16_t)mine, lanes);
            } else {
                const Posting *end = p->postings + p->first[row + 1];
                for (const Posting *posting = p->postings + p->first[row]; posting < end; posting++)
                    sums[posting->reference] = (int16_t)(sums[posting->reference] +
                                                         (mine < posting->count ? mine : posting->count));
            }
        }
        Double2 hyp_inverse[MAX_ORDERS];
        for (int k = 0; k < orders; k++) hyp_inverse[k] = reciprocal(corpus->totals[i * (size_t)orders + k]);
        for (size_t j = 0; j < columns; j++) {
            uint32_t pair[MAX_ORDERS];
            for (int k = 0; k < orders; k++) pair[k] = (uint32_t)matches[(size_t)k * lanes + j];
            if (score_pair(p, worker, i, j, pair, hyp_inverse) < 0) return -1;
        }
    }
    return 0;
}

/* With DENSE_FEWEST to DENSE_COLUMNS references and texts of at most DENSE_MOST n-grams, the rows that many of
   them hold (postings for at least a quarter of them: MBR samples' common n-grams), each made a row of every
   reference's count (padded to LANES). dense_row (all + 1 entries) gives a row's place among them or NO_CLASS.
   Their number, 0 for none (the postings alone then), or -1 when out of memory. */
static long dense_counts(const Corpus *corpus, const uint32_t *first, const Posting *postings, size_t all,
                         size_t columns, Keep *keep, uint32_t **dense_row, int16_t **dense) {
    if (columns > DENSE_COLUMNS || columns < DENSE_FEWEST || corpus->longest > DENSE_MOST) return 0;
    size_t long_rows = 0;
    for (size_t row = 0; row < all; row++) long_rows += (first[row + 1] - first[row]) * 4 >= columns;
    if (long_rows == 0) return 0;
    const size_t lanes = padded(columns);
    *dense_row = keep_alloc(keep, (all + 1) * sizeof(uint32_t), 0);
    *dense = keep_alloc(keep, long_rows * lanes * sizeof(int16_t), 1);
    if (*dense_row == NULL || *dense == NULL) { /* given back here: the caller frees nothing of a -1 */
        keep_free(keep, *dense_row, (all + 1) * sizeof(uint32_t));
        keep_free(keep, *dense, long_rows * lanes * sizeof(int16_t));
        *dense_row = NULL;
        *dense = NULL;
        return -1;
    }
    uint32_t made = 0;
    for (size_t row = 0; row < all; row++) {
        (*dense_row)[row] = NO_CLASS;
        if ((first[row + 1] - first[row]) * 4 < columns) continue;
        for (uint32_t k = first[row]; k < first[row + 1]; k++)
            (*dense)[(size_t)made * lanes + postings[k].reference] = (int16_t)postings[k].count;
        (*dense_row)[row] = made++;
    }
    return (long)long_rows;
}

/* The references' postings: how many references hold each row (the first pass), then every reference's distinct
   rows in reference order (the second); first[row] .. first[row + 1] are the row's. 0, or 1 when the pause said stop. */
static int build_postings(const Corpus *corpus, size_t columns, int orders,
                          Scratch *s, uint32_t *first, Posting *postings, Pause pause, void *context) {
    const size_t all = corpus->base[orders];
    size_t done = 0, next_pause = 0;
    for (int pass = 0; pass < 2; pass++) {
        memset(s->seen, 0xFF, (all + 1) * sizeof(uint32_t));
        for (size_t j = 0; j < columns; j++) {
            if (pause_now(done, &next_pause, pause, context)) return 1;
            size_t distinct = distinct_ngrams(corpus, corpus->first_column + j, orders, (uint32_t)j,
                                              s->seen, s->where, s->entries);
            done += distinct + 1;
            for (size_t e = 0; e < distinct; e++) {
                if (pass == 0) {
                    first[s->entries[e].reference + 1]++;
                } else {
                    Posting *posting = &postings[first[s->entries[e].reference]++];
                    posting->reference = (uint32_t)j;
                    posting->count = s->entries[e].count;
                }
            }
        }
        if (pass == 0)
            for (size_t row = 0; row < all; row++) first[row + 1] += first[row];
    }
    for (size_t row = all; row > 0; row--) first[row] = first[row - 1]; /* back to each row's start */
    first[0] = 0;
    return 0;
}

int pairwise_scores(const Texts *texts, const Scoring *scoring, int threads, double *scores, Flagged *flagged,
                    Keep *keep, Pause pause, void *context) {
    const int orders = scoring->char_order + scoring->word_order;
    const size_t rows = texts->rows, columns = texts->columns;
    Run run;
    uint32_t *first = NULL;
    Posting *postings = NULL;
    Double2 *column_inverse = NULL;
    int16_t *dense = NULL;
    uint32_t *dense_row = NULL;
    long dense_rows = 0;
    size_t all = 0, reference_ngrams = 0;
    int status = run_begin(&run, texts, scoring, threads, 0, padded(columns) * (size_t)orders + 1, keep, pause,
                           context); /* matches: a row's, as uint32_t (or dense, int16_t) */
    if (status != 0) goto done;
    status = -1;
    all = run.corpus.base[orders];
    for (size_t j = 0; j < columns; j++)
        for (int o = 0; o < orders; o++)
            reference_ngrams += run.corpus.totals[(run.corpus.first_column + j) * orders + o];
    first = keep_alloc(keep, (all + 2) * sizeof(uint32_t), 1);
    postings = keep_alloc(keep, (reference_ngrams + 1) * sizeof(Posting), 0);
    column_inverse = keep_alloc(keep, (columns * (size_t)orders + 1) * sizeof(Double2), 0);
    if (!first || !postings || !column_inverse) goto done;
    for (size_t k = 0; k < columns * (size_t)orders; k++)
        column_inverse[k] = reciprocal(run.corpus.totals[run.corpus.first_column * (size_t)orders + k]);
    if ((status = build_postings(&run.corpus, columns, orders, &run.scratch[0], first,
                                 postings, pause, context)) != 0)
        goto done;
    memset(run.scratch[0].seen, 0xFF, (all + 1) * sizeof(uint32_t));
    const int same = run.corpus.first_column == 0 && rows == columns;
    if ((dense_rows = dense_counts(&run.corpus, first, postings, all, columns, keep, &dense_row, &dense)) < 0)
        goto done;
    Pairwise shared = {scoring, rows,    columns, orders, same, first, postings, column_inverse,
                       scores,  &run,    dense_row, dense};
    /* the triangle's rows shrink as they go: finer chunks keep the threads busy to the end */
    size_t chunk = PAIRS_PER_PAUSE / (columns + 1) + 1, balanced = rows / ((same ? 16 : 4) * (size_t)run.threads) + 1;
    status = parallel_rows(rows, chunk < balanced ? chunk : balanced, run.threads,
                           dense_rows > 0 ? score_rows_dense : score_rows, &shared, pause, context);
done:
    keep_free(keep, dense_row, (all + 1) * sizeof(uint32_t));
    keep_free(keep, dense, (size_t)(dense_rows > 0 ? dense_rows : 0) * padded(columns) * sizeof(int16_t));
    keep_free(keep, first, (all + 2) * sizeof(uint32_t));
    keep_free(keep, postings, (reference_ngrams + 1) * sizeof(Posting));
    keep_free(keep, column_inverse, (columns * (size_t)orders + 1) * sizeof(Double2));
    return run_end(&run, flagged, status);
}
