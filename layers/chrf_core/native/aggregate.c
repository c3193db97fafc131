/*
 * aggregate: each hypothesis against the references' n-gram counts summed (reference aggregation, Vamvas and
 * Sennrich 2024), exactly: with R references, per order, matches = sum over n-grams g of min(R h_g, S_g), where S_g
 * sums g's counts over the references; the hypothesis' n-grams count R times, the references' all of theirs. Cost:
 * the texts' length times the orders, whatever the number of references (no Python here).
 *
 * With weights w_j for the references, S_g = sum over j of w_j times g's count in reference j, the hypothesis'
 * n-grams count W = sum of w_j times, the references' n-grams count w_j times each: the same formula with the
 * uniform 1 replaced by the weights. Every count is then divided by W (a score's ratios do not change): the weights
 * (double-doubles within 2^-106 of the exact ones times a power of two that makes the largest at most 1; one far
 * below the largest within 2^-1074) are taken as their shares w_j / W (a nonzero one never 0), so that W is 1
 * exactly and a hypothesis' counts are its own integers. Weighted counts are double-double values, each a sum of
 * positive terms, so relative errors only add up (u = 2^-104 bounds each double-double operation's, about 2^-105):
 * a share's is at most (R + 3) u (R references: their total, then a quotient), S_g's adds one u per occurrence of
 * g in the references, a hypothesis' matches one per n-gram of it (its part for g, min(h_g, S_g), is formed from
 * S_g's computed value exactly, weighted_occurrence: as close to the exact part, relatively, as S_g is; the parts
 * below 1 are then summed, one u an addition), the references' weighted n-grams two per reference, and the
 * score's formula far fewer than 256. A score is thus within E = (3 R + N + L + 256) u of its exact value (N: the
 * most reference n-grams of one order, L: the most n-grams of one text), 2^-76 at most at the texts' limit (2^28
 * code points); a score within 16 E (or the caller's tolerance, if looser) of a rounding midpoint is flagged. With
 * a thousand samples of a sentence, 16 E is about 2^-83: a score is flagged about once in 2^30.
 *
 * That bound holds while every nonzero weighted count is at least 2^-400 (then every product and quotient the score
 * forms stays a normal double-double). A share of the weights below 2^-400 (the caller rounds a nonzero one below
 * the smallest double up to it, so that it is never 0 here) can make a count smaller: a hypothesis with such a
 * count is flagged, and only those are computed exactly; any other count it adds to is at least 2^-400, next to
 * which its absolute error (below 2^-1074 a term) is far below the bound.
 *
 * A flagged hypothesis is then counted exactly here, when the caller gives the weights' exact values too (each an
 * integer of `limbs` 32-bit words, the weights scaled by one power of two): S_g, W and the references' weighted
 * n-grams as multi-word integers over the corpus already built, only for the n-grams of the flagged hypotheses
 * (a pass over the references' n-grams, a group of flagged hypotheses at a time, their accumulators within
 * EXACT_LIMBS words), and their per-order counts handed back for the caller to round exactly (exact_recount).
 */
#include "mbr.h"

#include <stdlib.h>
#include <string.h>

#define NGRAMS_PER_PAUSE (POLL_MASK + 1) /* hypothesis n-grams scored between two pauses: kernel.h's interval */
#define EXACT_DOUBLES 9007199254740992.0 /* 2^53: counts from here on are flagged for exact computation */
#define SMALLEST_WEIGHTED 0x1p-400       /* a nonzero weighted count below it is flagged for exact computation */
#define THREADED_POINTS ((size_t)1 << 14) /* fewer code points in all: one thread (starting one would cost more) */

typedef struct {
    const Scoring *scoring;
    int orders;
    uint64_t references;        /* R */
    const uint32_t *summed;     /* per row: S, the references' count */
    const uint64_t *ref_ngrams; /* per order: all the references' n-grams */
    double *scores;
    int64_t *counts;
    Run *run;
    const Double2 *weighted_sums;   /* with weights (else NULL), per row: S / W, the weighted count of a share */
    const Double2 *weighted_ngrams; /* per order: the references' n-grams, weighted by the shares */
} Aggregate;

/* ---- the exact recount: multi-word integers of `width` 32-bit words, least significant first ---- */

#define EXACT_LIMBS ((size_t)1 << 22) /* words of S_g accumulators held at once (16 MB): flagged rows grouped */
#define NO_SLOT UINT32_MAX

/* acc (width words) += x (xlen words, xlen <= width) * m */
static void big_add_mul(uint32_t *acc, const uint32_t *x, int xlen, uint32_t m, int width) {
    uint64_t carry = 0;
    int k = 0;
    for (; k < xlen; k++) {
        carry += (uint64_t)x[k] * m + acc[k];
        acc[k] = (uint32_t)carry;
        carry >>= 32;
    }
    for (; carry && k < width; k++) {
        carry += acc[k];
        acc[k] = (uint32_t)carry;
        carry >>= 32;
    }
}

static int big_less(const uint32_t *a, const uint32_t *b, int width) {
    for (int k = width - 1; k >= 0; k--)
        if (a[k] != b[k]) return a[k] < b[k];
    return 0;
}

/* The exact per-order counts of the flagged rows rows[0..count) (weights: columns x limbs words): into out, per row
   and order, (W x its n-grams, the references' weighted n-grams, matches), each `width` words. 0; 1 when the pause
   said stop; -1 when out of memory. Single-threaded (a few rows), on worker 0's scratch. */
static int exact_recount(const Aggregate *a, const uint32_t *weights, int limbs, const size_t *rows, size_t count,
                         uint32_t *out, int width, Pause pause, void *context) {
    const Corpus *corpus = &a->run->corpus;
    const int orders = a->orders;
    const size_t columns = a->references, all = corpus->base[orders];
    Scratch *s = &a->run->scratch[0];
    uint32_t *total = calloc((size_t)width, sizeof(uint32_t)), *slot_of = malloc((all + 1) * sizeof(uint32_t));
    uint32_t *refs = calloc((size_t)orders * (size_t)width, sizeof(uint32_t)), *sums = NULL, *mine = NULL;
    Posting *kept = NULL;
    int status = -1;
    if (total == NULL || slot_of == NULL || refs == NULL) goto done;
    if ((mine = malloc((size_t)width * sizeof(uint32_t))) == NULL) goto done;
    memset(slot_of, 0xFF, (all + 1) * sizeof(uint32_t));
    for (size_t j = 0; j < columns; j++) { /* W, and the references' n-grams weighted */
        const uint32_t *w = weights + j * (size_t)limbs;
        big_add_mul(total, w, limbs, 1, width);
        for (int o = 0; o < orders; o++)
            big_add_mul(refs + (size_t)o * width, w, limbs, corpus->totals[(corpus->first_column + j) * orders + o],
                        width);
    }
    size_t next_pause = 0, counted = 0;
    for (size_t first = 0; first < count;) { /* a group of flagged rows: their n-grams' S_g within EXACT_LIMBS */
        memset(s->seen, 0xFF, (all + 1) * sizeof(uint32_t));
        size_t slots = 0, end = first, held = 0, capacity = 0;
        free(kept);
        kept = NULL;
        /* the group's entries, kept in order: each row's header (its index, its number of n-grams), its n-grams */
        while (end < count) {
            const size_t i = rows[end];
            const size_t distinct = distinct_ngrams(corpus, i, orders, (uint32_t)(end - first),
                                                    s->seen, s->where, s->entries);
            size_t fresh = 0;
            for (size_t e = 0; e < distinct; e++) fresh += slot_of[s->entries[e].reference] == NO_SLOT;
            if (end > first && (slots + fresh) * (size_t)width > EXACT_LIMBS) break;
            if (held + distinct + 1 > capacity) {
                capacity = 2 * (held + distinct + 1);
                Posting *grown = realloc(kept, capacity * sizeof(Posting));
                if (grown == NULL) goto done;
                kept = grown;
            }
            kept[held].reference = (uint32_t)i; /* a row's header: its index, then its number of entries */
            kept[held++].count = (uint32_t)distinct;
            for (size_t e = 0; e < distinct; e++) {
                const uint32_t row = s->entries[e].reference;
                if (slot_of[row] == NO_SLOT) slot_of[row] = (uint32_t)slots++;
                kept[held++] = s->entries[e];
            }
            end++;
        }
        free(sums);
        if ((sums = calloc(slots ? slots * (size_t)width : 1, sizeof(uint32_t))) == NULL) goto done;
        for (int o = 0; o < orders; o++) { /* S_g for the group's n-grams: a pass over the references' n-grams */
            const int kind = order_kind(corpus, o), n = order_n(corpus, o);
            const uint32_t *ids = order_ids(corpus, o);
            for (size_t j = 0; j < columns; j++) {
                if (pause_now(counted, &next_pause, pause, context)) {
                    status = 1;
                    goto done;
                }
                const size_t text = corpus->first_column + j;
                const size_t from = corpus->unit_start[kind][text], to = corpus->unit_start[kind][text + 1];
                counted += to - from + 1;
                const uint32_t *w = weights + j * (size_t)limbs;
                for (size_t u = from; u + (size_t)(n - 1) < to; u++) {
                    const uint32_t slot = slot_of[corpus->base[o] + ids[u]];
                    if (slot != NO_SLOT) big_add_mul(sums + (size_t)slot * width, w, limbs, 1, width);
                }
            }
        }
        for (size_t k = first, at = 0; k < end; k++) { /* each row's counts from them */
            const size_t i = kept[at].reference, distinct = kept[at].count;
            uint32_t *mine_out = out + k * 3 * (size_t)orders * width;
            memset(mine_out, 0, 3 * (size_t)orders * width * sizeof(uint32_t));
            for (int o = 0; o < orders; o++) {
                big_add_mul(mine_out + (size_t)(3 * o) * width, total, width, corpus->totals[i * orders + o], width);
                memcpy(mine_out + (size_t)(3 * o + 1) * width, refs + (size_t)o * width, width * sizeof(uint32_t));
            }
            for (size_t e = 1; e <= distinct; e++) {
                const size_t row = kept[at + e].reference;
                int o = 0;
                while (row >= corpus->base[o + 1]) o++;
                memset(mine, 0, (size_t)width * sizeof(uint32_t));
                big_add_mul(mine, total, width, kept[at + e].count, width);
                const uint32_t *theirs = sums + (size_t)slot_of[row] * width;
                big_add_mul(mine_out + (size_t)(3 * o + 2) * width, big_less(mine, theirs, width) ? mine : theirs, width, 1,
                            width);
            }
            at += distinct + 1;
        }
        memset(slot_of, 0xFF, (all + 1) * sizeof(uint32_t)); /* the slots freed for the next group */
        first = end;
    }
    status = 0;
done:
    free(total);
    free(slot_of);
    free(refs);
    free(sums);
    free(mine);
    free(kept);
    return status;
}


static inline int below_range(Double2 count) { return count.hi > 0.0 && count.hi < SMALLEST_WEIGHTED; }

/* What an n-gram's k-th occurrence in a hypothesis adds to its weighted matches, min(h_g, S_g) in all: min(1, S_g -
   (k - 1)) while that is positive (as the unweighted count's one pass). A whole 1 goes to *ones; the rest, where S_g
   is below k, to *chain: S_g itself for k = 1, else S_g - (k - 1), which is exact (S_g's high double lies in
   [k - 1, k], so Sterbenz's lemma makes the subtraction exact and its low double the remainder's). */
static inline void weighted_occurrence(Double2 sum, uint32_t k, uint64_t *ones, Double2 *chain) {
    const Double2 whole = d2_of((double)k);
    if (!d2_less(sum, whole)) {
        (*ones)++;
    } else if (k == 1) {
        if (sum.hi > 0.0) *chain = d2_add_positive(*chain, sum);
    } else {
        const Double2 below = d2_of((double)(k - 1));
        if (d2_less(below, sum)) *chain = d2_add_positive(*chain, d2_add(sum, d2_of(-below.hi)));
    }
}

/* One hypothesis against the weighted references: its score (counts are not integers, so none are written);
   *outside set when a nonzero weighted count it uses is below the range the score is computed in. Each order's
   matches in one pass over its n-grams (weighted_occurrence), the whole ones counted apart and the rest summed in
   four chains, so that an addition waits for the one four occurrences back (a sum of positive terms all the same:
   the bound above holds). */
static Double2 weighted_score(const Aggregate *a, Scratch *s, size_t i, int *outside) {
    const Corpus *corpus = &a->run->corpus;
    const int orders = a->orders;
    const uint32_t mark = (uint32_t)i;
    Double2 hyp[MAX_ORDERS], ref[MAX_ORDERS], matches[MAX_ORDERS];
    for (int o = 0; o < orders; o++) {
        const int kind = order_kind(corpus, o), n = order_n(corpus, o);
        const uint32_t *ids = order_ids(corpus, o);
        const Double2 *sums = a->weighted_sums + corpus->base[o];
        uint32_t *seen = s->seen + corpus->base[o], *times = s->where + corpus->base[o];
        const size_t first = corpus->unit_start[kind][i], end = corpus->unit_start[kind][i + 1];
        const size_t last = end >= first + (size_t)n ? end - (size_t)(n - 1) : first; /* positions [first, last) */
        Double2 chain[4] = {d2_of(0.0), d2_of(0.0), d2_of(0.0), d2_of(0.0)};
        uint64_t ones = 0;
        size_t u = first;
#define OCCURRENCE(lane)                                                                                          \
    do {                                                                                                          \
        const uint32_t c = ids[u + (lane)];                                                                       \
        uint32_t k = 1;                                                                                           \
        if (seen[c] != mark) {                                                                                    \
            seen[c] = mark;                                                                                       \
            times[c] = 1;                                                                                         \
        } else {                                                                                                  \
            k = ++times[c];                                                                                       \
        }                                                                                                         \
        weighted_occurrence(sums[c], k, &ones, &chain[lane]);                                                     \
    } while (0)
        for (; u + 4 <= last; u += 4) {
            OCCURRENCE(0);
            OCCURRENCE(1);
            OCCURRENCE(2);
            OCCURRENCE(3);
        }
        for (; u < last; u++) OCCURRENCE(0);
#undef OCCURRENCE
        const Double2 fractions = d2_add_positive(d2_add_positive(chain[0], chain[1]),
                                                  d2_add_positive(chain[2], chain[3]));
        matches[o] = d2_add_positive(d2_of((double)ones), fractions);
        hyp[o] = d2_of(corpus->totals[i * (size_t)orders + o]);
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
        int outside = 0;
        const Double2 value = weighted_score(a, s, i, &outside);
        a->scores[i] = value.hi;
        if ((outside || near_midpoint(value, a->scoring->tolerance)) && flag(&a->run->found[worker], i) < 0)
            return -1;
    }
    return 0;
}

/* Rows [from, to) against the references' summed counts (a RowsTask): scores and integer counts. A hypothesis'
   matches in one pass over its n-grams, without gathering its distinct ones first: min(R h_g, S_g) is the sum, over
   g's k-th occurrence in it (k = 1 .. h_g), of min(R, S_g - R (k - 1)) while that is positive (each occurrence adds
   what it newly matches), its occurrences so far counted in the worker's scratch (where, valid where seen is i). */
static int score_hypotheses(void *shared, int worker, size_t from, size_t to) {
    const Aggregate *a = shared;
    Scratch *s = &a->run->scratch[worker];
    const Corpus *corpus = &a->run->corpus;
    const int orders = a->orders;
    const uint64_t r = a->references;
    for (size_t i = from; i < to; i++) {
        const uint32_t mark = (uint32_t)i;
        uint64_t matches[MAX_ORDERS] = {0};
        for (int o = 0; o < orders; o++) {
            const int kind = order_kind(corpus, o), n = order_n(corpus, o);
            const uint32_t *ids = order_ids(corpus, o), *summed = a->summed + corpus->base[o];
            uint32_t *seen = s->seen + corpus->base[o], *times = s->where + corpus->base[o];
            const size_t first = corpus->unit_start[kind][i], end = corpus->unit_start[kind][i + 1];
            uint64_t matched = 0;
            for (size_t u = first; u + (size_t)(n - 1) < end; u++) {
                const uint32_t c = ids[u];
                uint64_t before = 0; /* R x its occurrences before this one */
                if (seen[c] != mark) {
                    seen[c] = mark;
                    times[c] = 1;
                } else {
                    before = r * times[c]++;
                }
                const uint64_t theirs = summed[c];
                if (theirs > before) matched += theirs - before < r ? theirs - before : r;
            }
            matches[o] = matched;
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

/* The references' weighted counts of one order (a JobTask: the orders' rows are apart, each order on one thread). */
typedef struct {
    const Corpus *corpus;
    const Scoring *scoring;
    const Double2 *shares;
    size_t columns;
    Double2 *weighted_sums, *weighted_ngrams;
} Weighing;

static int weigh_order(void *shared, size_t job, int worker, Pause pause, void *context) {
    (void)worker;
    const Weighing *w = shared;
    const Corpus *corpus = w->corpus;
    const int o = (int)job, orders = w->scoring->char_order + w->scoring->word_order;
    const int kind = order_kind(corpus, o), n = order_n(corpus, o);
    const uint32_t *ids = order_ids(corpus, o);
    Double2 *sums = w->weighted_sums + corpus->base[o], ngrams = d2_of(0.0);
    size_t counted = 0, next_pause = 0;
    for (size_t j = 0; j < w->columns; j++) {
        if (pause_now(counted, &next_pause, pause, context)) return 1;
        const size_t text = corpus->first_column + j;
        const size_t from = corpus->unit_start[kind][text], to = corpus->unit_start[kind][text + 1];
        counted += to - from + 1;
        const Double2 weight = w->shares[j];
        for (size_t i = from; i + (size_t)(n - 1) < to; i++) sums[ids[i]] = d2_add_positive(sums[ids[i]], weight);
        ngrams = d2_add_positive(ngrams, d2_mul(weight, d2_of(corpus->totals[text * orders + o])));
    }
    w->weighted_ngrams[o] = ngrams;
    return 0;
}

int aggregate_scores(const Texts *texts, const Scoring *scoring, const Double2 *weights, ExactCounts *exact,
                     int threads, double *scores, int64_t *counts, Flagged *flagged, Keep *keep, Pause pause,
                     void *context) {
    const int orders = scoring->char_order + scoring->word_order;
    const size_t rows = texts->rows, columns = texts->columns;
    Run run;
    uint64_t ref_ngrams[MAX_ORDERS] = {0};
    Double2 *weighted_sums = NULL, *shares = NULL, weighted_ngrams[MAX_ORDERS], weight_total = d2_of(0.0);
    for (int o = 0; o < orders; o++) weighted_ngrams[o] = d2_of(0.0);
    size_t rows_weighted = 0;           /* weighted_sums' */
    Scoring weighted_scoring = *scoring; /* with weights, its tolerance from the error bound (above) */
    if (texts->start[texts->rows + (texts->same ? 0 : columns)] < THREADED_POINTS) threads = 1;
    int status = run_begin(&run, texts, scoring, threads, weights == NULL, 0, keep, pause, context);
    if (status != 0) goto done;
    status = -1;
    const Corpus *corpus = &run.corpus;
    for (size_t j = 0; j < columns; j++)
        for (int o = 0; o < orders; o++) ref_ngrams[o] += corpus->totals[(corpus->first_column + j) * orders + o];
    if (weights != NULL) { /* the references' weighted counts, summed per row */
        rows_weighted = corpus->base[orders] + 1;
        weighted_sums = keep_alloc(keep, rows_weighted * sizeof(Double2), 0);
        shares = keep_alloc(keep, columns * sizeof(Double2), 0);
        if (weighted_sums == NULL || shares == NULL) goto done;
        for (size_t row = 0; row <= corpus->base[orders]; row++) weighted_sums[row] = d2_of(0.0);
        for (size_t j = 0; j < columns; j++) weight_total = d2_add(weight_total, weights[j]);
        for (size_t j = 0; j < columns; j++) { /* a nonzero weight's share never 0: what it reaches is flagged */
            shares[j] = d2_div(weights[j], weight_total);
            if (weights[j].hi > 0.0 && shares[j].hi == 0.0) shares[j] = d2_of(0x1p-1074);
        }
        uint64_t most = 0; /* N */
        for (int o = 0; o < orders; o++) most = ref_ngrams[o] > most ? ref_ngrams[o] : most;
        const double bound = 16 * ((double)(3 * columns) + (double)most + (double)corpus->longest + 256) * 0x1p-104;
        if (bound > weighted_scoring.tolerance) weighted_scoring.tolerance = bound;
        Weighing weighing = {corpus, scoring, shares, columns, weighted_sums, weighted_ngrams};
        status = parallel_jobs((size_t)orders, run.threads, weigh_order, &weighing, pause, context);
        if (status != 0) goto done;
        status = -1;
    }
    Aggregate shared = {weights != NULL ? &weighted_scoring : scoring, orders, columns, corpus->column_counts,
                        ref_ngrams, scores, counts, &run, weighted_sums, weighted_ngrams};
    size_t chunk = NGRAMS_PER_PAUSE / (corpus->longest + 1) + 1, balanced = rows / (16 * (size_t)run.threads) + 1;
    status = parallel_rows(rows, chunk < balanced ? chunk : balanced, run.threads,
                           weights != NULL ? score_weighted_hypotheses : score_hypotheses, &shared, pause, context);
    if (status == 0 && weights != NULL && exact != NULL && exact->weights != NULL) {
        size_t found = 0, at = 0; /* the flagged rows in the order run_end hands them over */
        for (int w = 0; w < run.threads; w++) found += run.found[w].count;
        exact->count = found;
        if (found) {
            size_t *chosen = malloc(found * sizeof(size_t));
            exact->counts = malloc(found * 3 * (size_t)orders * (size_t)exact->width * sizeof(uint32_t));
            if (chosen == NULL || exact->counts == NULL) {
                free(chosen);
                status = -1;
                goto done;
            }
            for (int w = 0; w < run.threads; w++)
                for (size_t k = 0; k < run.found[w].count; k++) chosen[at++] = run.found[w].indices[k];
            status = exact_recount(&shared, exact->weights, exact->limbs, chosen, found, exact->counts, exact->width,
                                   pause, context);
            free(chosen);
        }
    }
done:
    keep_free(keep, weighted_sums, rows_weighted * sizeof(Double2));
    keep_free(keep, shares, columns * sizeof(Double2));
    return run_end(&run, flagged, status);
}
