/*
 * aggregate: each hypothesis against the references' n-gram counts summed (reference aggregation, Vamvas and
 * Sennrich 2024), exactly: with R references, per order, matches = sum over n-grams g of min(R h_g, S_g), where S_g
 * sums g's counts over the references; the hypothesis' n-grams count R times, the references' all of theirs. Cost:
 * the texts' length times the orders, whatever the number of references (no Python here).
 */
#include "mbr.h"

#include <stdlib.h>
#include <string.h>

#define NGRAMS_PER_PAUSE (1u << 20) /* hypothesis n-grams scored between two pauses (for a pending signal) */
#define EXACT_DOUBLES 9007199254740992.0 /* 2^53: counts from here on are flagged for exact computation */

typedef struct {
    const Scoring *scoring;
    int orders;
    uint64_t references;      /* R */
    const uint64_t *summed;   /* per row: S, the references' count */
    const uint64_t *ref_ngrams; /* per order: all the references' n-grams */
    double *scores;
    int64_t *counts;
    Run *run;
} Aggregate;

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

int aggregate_scores(const Texts *texts, const Scoring *scoring, int threads, double *scores, int64_t *counts,
                     Flagged *flagged, Pause pause, void *context) {
    const int orders = scoring->char_order + scoring->word_order;
    const size_t rows = texts->rows, columns = texts->columns;
    Run run;
    uint64_t *summed = NULL, ref_ngrams[MAX_ORDERS] = {0};
    int status = run_begin(&run, texts, scoring, threads, 0, pause, context);
    if (status != 0) goto done;
    status = -1;
    const Corpus *corpus = &run.corpus;
    summed = calloc(corpus->base[orders] + 1, sizeof(uint64_t));
    if (summed == NULL) goto done;
    size_t counted = 0, next_pause = 0;
    for (int o = 0; o < orders; o++) { /* the references' counts, summed per row */
        const int kind = o >= scoring->char_order, n = kind ? o - scoring->char_order + 1 : o + 1;
        const size_t total = corpus->unit_start[kind][corpus->texts];
        const uint32_t *ids = corpus->classes[kind] + (size_t)(n - 1) * total;
        for (size_t j = rows; j < rows + columns; j++) {
            if (pause_now(counted, &next_pause, pause, context)) {
                status = 1;
                goto done;
            }
            const size_t from = corpus->unit_start[kind][j], to = corpus->unit_start[kind][j + 1];
            counted += to - from + 1;
            for (size_t i = from; i + (size_t)(n - 1) < to; i++) summed[corpus->base[o] + ids[i]]++;
            ref_ngrams[o] += corpus->totals[j * orders + o];
        }
    }
    Aggregate shared = {scoring, orders, columns, summed, ref_ngrams, scores, counts, &run};
    size_t chunk = NGRAMS_PER_PAUSE / (corpus->longest + 1) + 1, balanced = rows / (4 * (size_t)run.threads) + 1;
    status = parallel_rows(rows, chunk < balanced ? chunk : balanced, run.threads, score_hypotheses, &shared, pause,
                           context);
done:
    free(summed);
    return run_end(&run, flagged, status);
}
