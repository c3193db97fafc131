/*
 * aggregate: each hypothesis against the references' n-gram counts summed (reference aggregation, Vamvas and
 * Sennrich 2024), exactly: with R references, per order, matches = sum over n-grams g of min(R h_g, S_g), where S_g
 * sums g's counts over the references; the hypothesis' n-grams count R times, the references' all of theirs. Cost:
 * the texts' length times the orders, whatever the number of references (no Python here).
 *
 * With weights w_j for the references, S_g = sum over j of w_j times g's count in reference j, the hypothesis'
 * n-grams count W = sum of w_j times, the references' n-grams count w_j times each: the same formula with the
 * uniform 1 replaced by the weights. Weighted counts are double-double values, each a sum of positive terms with a
 * relative error far below 2^-70; a score within the caller's tolerance of a rounding midpoint is flagged.
 *
 * That bound holds while every nonzero weighted count is at least 2^-400 (then every product and quotient the score
 * forms stays a normal double-double). A share of the weights below 2^-400 (the caller rounds a nonzero one below
 * the smallest double up to it, so that it is never 0 here) can make a count smaller: a hypothesis with such a
 * count is flagged, and only those are computed exactly; any other count it adds to is at least 2^-400, next to
 * which its absolute error (below 2^-1074 a term) is far below the bound.
 */
#include "mbr.h"

#include <stdlib.h>
#include <string.h>

#define NGRAMS_PER_PAUSE (POLL_MASK + 1) /* hypothesis n-grams scored between two pauses: kernel.h's interval */
#define EXACT_DOUBLES 9007199254740992.0 /* 2^53: counts from here on are flagged for exact computation */
#define SMALLEST_WEIGHTED 0x1p-400       /* a nonzero weighted count below it is flagged for exact computation */

typedef struct {
    const Scoring *scoring;
    int orders;
    uint64_t references;        /* R */
    const uint32_t *summed;     /* per row: S, the references' count */
    const uint64_t *ref_ngrams; /* per order: all the references' n-grams */
    double *scores;
    int64_t *counts;
    Run *run;
    const Double2 *weighted_sums;   /* with weights (else NULL), per row: S, the weighted count */
    Double2 weight_total;           /* W */
    const Double2 *weighted_ngrams; /* per order: the references' n-grams, weighted */
} Aggregate;

static inline int below_range(Double2 count) { return count.hi > 0.0 && count.hi < SMALLEST_WEIGHTED; }

/* One hypothesis against the weighted references: its score (counts are not integers, so none are written);
   *outside set when a nonzero weighted count it uses is below the range the score is computed in. */
static Double2 weighted_score(const Aggregate *a, const Scratch *s, size_t i, size_t distinct, int *outside) {
    const Corpus *corpus = &a->run->corpus;
    const int orders = a->orders;
    Double2 values[3 * MAX_ORDERS];
    for (int o = 0; o < 3 * orders; o++) values[o] = d2_of(0.0);
    Double2 *hyp = values, *ref = values + orders, *matches = values + 2 * orders;
    for (size_t e = 0; e < distinct; e++) {
        const size_t row = s->entries[e].reference;
        int o = 0;
        while (row >= corpus->base[o + 1]) o++;
        const Double2 mine = d2_mul(a->weight_total, d2_of(s->entries[e].count)), theirs = a->weighted_sums[row];
        matches[o] = d2_add(matches[o], d2_less(mine, theirs) ? mine : theirs);
    }
    for (int o = 0; o < orders; o++) {
        hyp[o] = d2_mul(a->weight_total, d2_of(corpus->totals[i * (size_t)orders + o]));
        ref[o] = a->weighted_ngrams[o];
        *outside |= below_range(matches[o]) || below_range(ref[o]);
    }
    return chrf_score_of(a->scoring, orders, hyp, ref, matches, NULL, NULL);
}

/* Rows [from, to) against the weighted references (a RowsTask). */
static int score_weighted_hypotheses(void *shared, int worker, size_t from, size_t to) {
    const Aggregate *a = shared;
    Scratch *s = &a->run->scratch[worker];
    for (size_t i = from; i < to; i++) {
        size_t distinct = distinct_ngrams(&a->run->corpus, i, a->scoring->char_order, a->orders, (uint32_t)i, s->seen,
                                          s->where, s->entries);
        int outside = 0;
        const Double2 value = weighted_score(a, s, i, distinct, &outside);
        a->scores[i] = value.hi;
        if ((outside || near_midpoint(value, a->scoring->tolerance)) && flag(&a->run->found[worker], i) < 0)
            return -1;
    }
    return 0;
}

/* Rows [from, to) against the references' summed counts (a RowsTask): scores and integer counts. */
static int score_hypotheses(void *shared, int worker, size_t from, size_t to) {
    const Aggregate *a = shared;
    Scratch *s = &a->run->scratch[worker];
    const Corpus *corpus = &a->run->corpus;
    const int orders = a->orders;
    const size_t *base = corpus->base;
    const uint64_t r = a->references;
    for (size_t i = from; i < to; i++) {
        size_t distinct = distinct_ngrams(corpus, i, a->scoring->char_order, orders, (uint32_t)i, s->seen,
                                          s->where, s->entries);
        uint64_t matches[MAX_ORDERS] = {0};
        for (size_t e = 0; e < distinct; e++) {
            const size_t row = s->entries[e].reference;
            int o = 0;
            while (row >= base[o + 1]) o++;
            const uint64_t mine = r * s->entries[e].count, theirs = a->summed[row];
            matches[o] += mine < theirs ? mine : theirs;
        }
        int64_t *counts = a->counts + i * 3 * (size_t)orders;
        int inexact = 0;
        for (int o = 0; o < orders; o++) {
            const uint64_t hyp = r * corpus->totals[i * (size_t)orders + o];
            counts[3 * o] = (int64_t)hyp;
            counts[3 * o + 1] = (int64_t)a->ref_ngrams[o];
            counts[3 * o + 2] = (int64_t)matches[o];
            s->values[o] = (double)hyp;
            s->values[orders + o] = (double)a->ref_ngrams[o];
            s->values[2 * orders + o] = (double)matches[o];
            inexact |= s->values[o] >= EXACT_DOUBLES || s->values[orders + o] >= EXACT_DOUBLES;
        }
        Double2 value = chrf_score(a->scoring, orders, s->values, s->values + orders, s->values + 2 * orders);
        a->scores[i] = value.hi;
        if ((inexact || near_midpoint(value, a->scoring->tolerance)) && flag(&a->run->found[worker], i) < 0) return -1;
    }
    return 0;
}

int aggregate_scores(const Texts *texts, const Scoring *scoring, const Double2 *weights, int threads, double *scores,
                     int64_t *counts, Flagged *flagged, Pause pause, void *context) {
    const int orders = scoring->char_order + scoring->word_order;
    const size_t rows = texts->rows, columns = texts->columns;
    Run run;
    uint64_t ref_ngrams[MAX_ORDERS] = {0};
    Double2 *weighted_sums = NULL, weighted_ngrams[MAX_ORDERS], weight_total = d2_of(0.0);
    for (int o = 0; o < orders; o++) weighted_ngrams[o] = d2_of(0.0);
    int status = run_begin(&run, texts, scoring, threads, weights == NULL, 0, pause, context);
    if (status != 0) goto done;
    status = -1;
    const Corpus *corpus = &run.corpus;
    for (size_t j = 0; j < columns; j++)
        for (int o = 0; o < orders; o++) ref_ngrams[o] += corpus->totals[(corpus->first_column + j) * orders + o];
    if (weights != NULL) { /* the references' weighted counts, summed per row */
        weighted_sums = malloc((corpus->base[orders] + 1) * sizeof(Double2));
        if (weighted_sums == NULL) goto done;
        for (size_t row = 0; row <= corpus->base[orders]; row++) weighted_sums[row] = d2_of(0.0);
        for (size_t j = 0; j < columns; j++) weight_total = d2_add(weight_total, weights[j]);
        size_t counted = 0, next_pause = 0;
        for (int o = 0; o < orders; o++) {
            const int kind = o >= scoring->char_order, n = kind ? o - scoring->char_order + 1 : o + 1;
            const uint32_t *ids = corpus->classes[kind] + (size_t)(n - 1) * corpus->stride[kind];
            for (size_t j = 0; j < columns; j++) {
                if (pause_now(counted, &next_pause, pause, context)) {
                    status = 1;
                    goto done;
                }
                const size_t text = corpus->first_column + j;
                const size_t from = corpus->unit_start[kind][text], to = corpus->unit_start[kind][text + 1];
                counted += to - from + 1;
                const Double2 weight = weights[j];
                for (size_t i = from; i + (size_t)(n - 1) < to; i++)
                    weighted_sums[corpus->base[o] + ids[i]] = d2_add(weighted_sums[corpus->base[o] + ids[i]], weight);
                const Double2 ngrams = d2_of(corpus->totals[text * orders + o]);
                weighted_ngrams[o] = d2_add(weighted_ngrams[o], d2_mul(weight, ngrams));
            }
        }
    }
    Aggregate shared = {scoring, orders, columns, corpus->column_counts, ref_ngrams, scores, counts, &run,
                        weighted_sums, weight_total, weighted_ngrams};
    size_t chunk = NGRAMS_PER_PAUSE / (corpus->longest + 1) + 1, balanced = rows / (16 * (size_t)run.threads) + 1;
    status = parallel_rows(rows, chunk < balanced ? chunk : balanced, run.threads, weights != NULL ? score_weighted_hypotheses : score_hypotheses, &shared, pause,
                           context);
done:
    free(weighted_sums);
    return run_end(&run, flagged, status);
}
