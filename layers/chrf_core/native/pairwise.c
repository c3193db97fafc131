/*
 * pairwise: every hypothesis against every reference, each text's n-grams counted once (no Python here).
 *
 * The references' distinct n-grams of each order become postings (row -> (reference, count)); a hypothesis then
 * walks the postings of its own distinct n-grams, adding min(its count, the reference's) to that reference's
 * matches. The cost is the texts' length times the orders, plus one step per n-gram two texts share. Hypotheses are
 * scored in chunks of rows on several threads, each with its own scratch.
 */
#include "mbr.h"

#include <stdlib.h>
#include <string.h>

#define PAIRS_PER_PAUSE (1u << 18) /* pairs scored between two pauses (for a pending signal) */

typedef struct {
    const Scoring *scoring;
    size_t rows, columns;
    int orders;
    const uint32_t *first;
    const Posting *postings;
    double *scores;
    Run *run;
} Pairwise;

static int score_rows(void *shared, int worker, size_t from, size_t to) {
    const Pairwise *p = shared;
    Scratch *s = &p->run->scratch[worker];
    const Corpus *corpus = &p->run->corpus;
    const int orders = p->orders, char_order = p->scoring->char_order;
    const size_t *base = corpus->base;
    for (size_t i = from; i < to; i++) {
        size_t distinct = distinct_ngrams(corpus, i, char_order, orders, (uint32_t)i, s->seen, s->where, s->entries);
        memset(s->matches, 0, p->columns * (size_t)orders * sizeof(uint32_t));
        for (size_t e = 0; e < distinct; e++) {
            const size_t row = s->entries[e].reference;
            const uint32_t mine = s->entries[e].count;
            int o = 0;
            while (row >= base[o + 1]) o++;
            for (uint32_t k = p->first[row]; k < p->first[row + 1]; k++) {
                const Posting posting = p->postings[k];
                s->matches[(size_t)posting.reference * orders + o] += mine < posting.count ? mine : posting.count;
            }
        }
        const uint32_t *hyp = corpus->totals + i * (size_t)orders;
        for (int o = 0; o < orders; o++) s->values[o] = hyp[o];
        for (size_t j = 0; j < p->columns; j++) {
            const uint32_t *ref = corpus->totals + (corpus->first_column + j) * (size_t)orders;
            const uint32_t *m = s->matches + j * orders;
            for (int o = 0; o < orders; o++) {
                s->values[orders + o] = ref[o];
                s->values[2 * orders + o] = m[o];
            }
            Double2 value = chrf_score(p->scoring, orders, s->values, s->values + orders, s->values + 2 * orders);
            p->scores[i * p->columns + j] = value.hi;
            if (near_midpoint(value, p->scoring->tolerance) && flag(&p->run->found[worker], i * p->columns + j) < 0) return -1;
        }
    }
    return 0;
}

/* The references' postings: how many references hold each row, then every reference's distinct rows in reference
   order; first[row] .. first[row + 1] are the row's. 0, or 1 when the pause said stop. */
static int build_postings(const Corpus *corpus, size_t columns, int char_order, int orders,
                          Scratch *s, uint32_t *first, Posting *postings, Pause pause, void *context) {
    const size_t all = corpus->base[orders];
    size_t done = 0, next_pause = 0;
    memset(s->seen, 0xFF, (all + 1) * sizeof(uint32_t));
    for (size_t j = 0; j < columns; j++) {
        if (pause_now(done, &next_pause, pause, context)) return 1;
        size_t distinct = distinct_ngrams(corpus, corpus->first_column + j, char_order, orders, (uint32_t)j, s->seen,
                                          s->where, s->entries);
        done += distinct + 1;
        for (size_t e = 0; e < distinct; e++) first[s->entries[e].reference + 1]++;
    }
    for (size_t row = 0; row < all; row++) first[row + 1] += first[row];
    memset(s->seen, 0xFF, (all + 1) * sizeof(uint32_t));
    for (size_t j = 0; j < columns; j++) {
        if (pause_now(done, &next_pause, pause, context)) return 1;
        size_t distinct = distinct_ngrams(corpus, corpus->first_column + j, char_order, orders, (uint32_t)j, s->seen,
                                          s->where, s->entries);
        done += distinct + 1;
        for (size_t e = 0; e < distinct; e++) {
            Posting *posting = &postings[first[s->entries[e].reference]++];
            posting->reference = (uint32_t)j;
            posting->count = s->entries[e].count;
        }
    }
    for (size_t row = all; row > 0; row--) first[row] = first[row - 1]; /* back to each row's start */
    first[0] = 0;
    return 0;
}

int pairwise_scores(const Texts *texts, const Scoring *scoring, int threads, double *scores, Flagged *flagged,
                    Pause pause, void *context) {
    const int orders = scoring->char_order + scoring->word_order;
    const size_t rows = texts->rows, columns = texts->columns;
    Run run;
    uint32_t *first = NULL;
    Posting *postings = NULL;
    int status = run_begin(&run, texts, scoring, threads, 0, columns * (size_t)orders + 1, pause, context);
    if (status != 0) goto done;
    status = -1;
    const size_t all = run.corpus.base[orders];
    size_t reference_ngrams = 0;
    for (size_t j = 0; j < columns; j++)
        for (int o = 0; o < orders; o++)
            reference_ngrams += run.corpus.totals[(run.corpus.first_column + j) * orders + o];
    first = calloc(all + 2, sizeof(uint32_t));
    postings = malloc((reference_ngrams + 1) * sizeof(Posting));
    if (!first || !postings) goto done;
    if ((status = build_postings(&run.corpus, columns, scoring->char_order, orders, &run.scratch[0], first,
                                 postings, pause, context)) != 0)
        goto done;
    memset(run.scratch[0].seen, 0xFF, (all + 1) * sizeof(uint32_t));
    Pairwise shared = {scoring, rows, columns, orders, first, postings, scores, &run};
    size_t chunk = PAIRS_PER_PAUSE / (columns + 1) + 1, balanced = rows / (4 * (size_t)run.threads) + 1;
    status = parallel_rows(rows, chunk < balanced ? chunk : balanced, run.threads, score_rows, &shared, pause,
                           context);
done:
    free(first);
    free(postings);
    return run_end(&run, flagged, status);
}
