/*
 * pairwise: every hypothesis against every reference, each text's n-grams counted once (no Python here).
 *
 * Every text's units (code points, or word tokens interned by content across all texts) get a class id per order
 * from one table per order, (class at the order below, next unit) -> class, so equal n-grams of any two texts share
 * an id. The references' distinct n-grams of each order become postings (class -> (reference, count)); a
 * hypothesis then walks the postings of its own distinct n-grams, adding min(its count, the reference's) to that
 * reference's matches. The cost is the texts' length times the orders, plus one step per n-gram two texts share.
 *
 * Each score is computed in double-double arithmetic (about 106 bits, every quantity positive, so relative errors
 * only add up: far below 2^-90) and rounded once to the nearest double. That is the correctly rounded value of the
 * exact fraction unless the exact value lies within the error bound of a midpoint between two doubles; such pairs
 * are flagged for the caller, which computes them exactly.
 */
#include "pairwise.h"

#include <stdlib.h>
#include <string.h>

#define PAIRS_PER_PAUSE (1u << 18) /* pairs scored between two pauses (for a pending signal) */

typedef struct {
    double hi, lo;
} Double2;

static inline Double2 quick_two_sum(double a, double b) {
    double s = a + b;
    Double2 r = {s, b - (s - a)};
    return r;
}

static inline Double2 two_sum(double a, double b) {
    double s = a + b, v = s - a;
    Double2 r = {s, (a - (s - v)) + (b - v)};
    return r;
}

static inline Double2 two_product(double a, double b) {
    double p = a * b, ta = 134217729.0 * a, tb = 134217729.0 * b;
    double ah = ta - (ta - a), al = a - ah, bh = tb - (tb - b), bl = b - bh;
    Double2 r = {p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
    return r;
}

static inline Double2 d2_add(Double2 a, Double2 b) {
    Double2 s = two_sum(a.hi, b.hi), t = two_sum(a.lo, b.lo);
    s = quick_two_sum(s.hi, s.lo + t.hi);
    return quick_two_sum(s.hi, s.lo + t.lo);
}

static inline Double2 d2_mul(Double2 a, Double2 b) {
    Double2 p = two_product(a.hi, b.hi);
    return quick_two_sum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}

static inline Double2 d2_of(double a) {
    Double2 r = {a, 0.0};
    return r;
}

static Double2 d2_div(Double2 a, Double2 b) {
    double q1 = a.hi / b.hi;
    Double2 p = d2_mul(b, d2_of(-q1));
    Double2 r = d2_add(a, p);
    double q2 = r.hi / b.hi;
    p = d2_mul(b, d2_of(-q2));
    r = d2_add(r, p);
    double q3 = r.hi / b.hi;
    return d2_add(quick_two_sum(q1, q2), d2_of(q3));
}

/* Whether rounding `value` (normalized: hi is lo + hi rounded) to hi may differ from rounding the exact value, which
   lies within hi * tolerance of it: true when lo is that close to half the gap to hi's neighbour on lo's side. */
static int near_midpoint(Double2 value, double tolerance) {
    if (value.lo == 0.0 || value.hi <= 0.0) return 0;
    uint64_t bits;
    memcpy(&bits, &value.hi, sizeof bits);
    bits = value.lo > 0 ? bits + 1 : bits - 1;
    double neighbour;
    memcpy(&neighbour, &bits, sizeof neighbour);
    double half_gap = (neighbour > value.hi ? neighbour - value.hi : value.hi - neighbour) / 2;
    double distance = (value.lo > 0 ? value.lo : -value.lo) - half_gap;
    return (distance < 0 ? -distance : distance) <= value.hi * tolerance;
}

/* One pair's score (0..100) from its per-order n-gram totals and matches, as the contract defines it. */
static Double2 pair_score(const Scoring *scoring, int orders, const uint32_t *hyp, const uint32_t *ref,
                          const uint32_t *matches) {
    const double b2 = scoring->beta_squared;
    Double2 zero = d2_of(0.0);
    if (scoring->per_order_f) { /* 100 / orders * sum of (1 + b^2) m / (b^2 r + h) */
        Double2 sum = zero;
        for (int o = 0; o < orders; o++)
            if (hyp[o] && ref[o] && matches[o])
                sum = d2_add(sum, d2_div(d2_of((1 + b2) * matches[o]), d2_of(b2 * ref[o] + hyp[o])));
        if (sum.hi == 0.0) return zero;
        return d2_div(d2_mul(sum, d2_of(100.0)), d2_of(orders));
    }
    /* P = sP / E and R = sR / E over the E effective orders; 100 (1 + b^2) P R / (b^2 P + R) is
       100 (1 + b^2) sP sR / (E (b^2 sP + sR)). */
    Double2 sp = zero, sr = zero;
    int effective = 0;
    for (int o = 0; o < orders; o++) {
        if (!hyp[o] || !ref[o]) continue;
        effective++;
        if (matches[o]) {
            sp = d2_add(sp, d2_div(d2_of(matches[o]), d2_of(hyp[o])));
            sr = d2_add(sr, d2_div(d2_of(matches[o]), d2_of(ref[o])));
        }
    }
    if (sp.hi == 0.0) return zero;
    Double2 numerator = d2_mul(d2_mul(sp, sr), d2_of(100.0 * (1 + b2)));
    Double2 denominator = d2_mul(d2_add(d2_mul(sp, d2_of(b2)), sr), d2_of(effective));
    return d2_div(numerator, denominator);
}

/* Every text's units and per-order class ids. */
typedef struct {
    size_t texts;
    size_t *unit_start[2]; /* [characters, words]: texts + 1 offsets into units and classes */
    uint32_t *units[2];
    uint32_t *classes[2]; /* per kind: order-major, order o's ids at classes + o * total units */
    uint32_t class_count[2][MAX_ORDERS];
} Corpus;

static void corpus_free(Corpus *corpus) {
    for (int kind = 0; kind < 2; kind++) {
        free(corpus->unit_start[kind]);
        free(corpus->units[kind]);
        free(corpus->classes[kind]);
    }
}

/* Units of every text for one kind (0: characters, whitespace removed unless kept; 1: word tokens interned by
   content over all texts), then the class ids of orders 1..orders, each order from a fresh generation of work's
   pair table. -1 on failure (no memory). */
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
    for (size_t t = 0; t < corpus->texts; t++) {
        const uint32_t *text = texts->points + texts->start[t];
        const size_t length = texts->start[t + 1] - texts->start[t];
        if (kind == 0) {
            for (size_t i = 0; i < length; i++)
                if (keep_whitespace || !is_space(text[i])) units[total++] = text[i];
        } else {
            const size_t count = tokenize(work, text, length, units + total, &tokens);
            if (count == TOKENIZE_INTERRUPTED) return -1;
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
            for (size_t i = from; i + (size_t)o < to; i++)
                now[i] = intern_pair(work, o ? below[i] : NO_CLASS, units[i + o], &ids);
        }
        corpus->class_count[kind][o] = ids;
    }
    return 0;
}

/* A reference's occurrences of one class (one order's n-gram): which reference, how often. */
typedef struct {
    uint32_t reference, count;
} Posting;

/* Visit text t's distinct n-grams of every order, as (row, count): row is base[o] + class id. seen/where are
   per-row scratch (seen must not hold `mark` beforehand); entries receives the distinct rows in order. */
static size_t distinct_ngrams(const Corpus *corpus, size_t t, int char_order, int orders, const size_t *base,
                              uint32_t mark, uint32_t *seen, uint32_t *where, Posting *entries) {
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

static int flag(Flagged *flagged, size_t index) {
    if (flagged->count == flagged->capacity) {
        size_t capacity = flagged->capacity ? 2 * flagged->capacity : 64;
        size_t *bigger = realloc(flagged->indices, capacity * sizeof(size_t));
        if (bigger == NULL) return -1;
        flagged->indices = bigger;
        flagged->capacity = capacity;
    }
    flagged->indices[flagged->count++] = index;
    return 0;
}

int pairwise_scores(const Texts *texts, const Scoring *scoring, double *scores, Flagged *flagged, Pause pause,
                    void *context) {
    const int char_order = scoring->char_order, orders = scoring->char_order + scoring->word_order;
    const size_t rows = texts->rows, columns = texts->columns;
    Corpus corpus;
    memset(&corpus, 0, sizeof corpus);
    corpus.texts = rows + columns;
    Work work;
    memset(&work, 0, sizeof work);
    uint32_t *totals = NULL, *matches = NULL, *seen = NULL, *where = NULL, *first = NULL;
    Posting *postings = NULL, *entries = NULL;
    int status = -1;
    const int kinds[2] = {char_order, scoring->word_order};
    for (int kind = 0; kind < 2; kind++)
        if (kinds[kind] && corpus_classes(&corpus, texts, kind, kinds[kind], scoring->keep_whitespace, &work) < 0)
            goto done;
    /* rows of the postings: order o's class c is row base[o] + c */
    size_t base[MAX_ORDERS + 1] = {0}, longest = 0, reference_ngrams = 0;
    for (int o = 0; o < orders; o++) {
        int kind = o >= char_order, n = kind ? o - char_order + 1 : o + 1;
        base[o + 1] = base[o] + corpus.class_count[kind][n - 1];
    }
    totals = calloc(corpus.texts * (size_t)orders + 1, sizeof(uint32_t));
    if (totals == NULL) goto done;
    for (size_t t = 0; t < corpus.texts; t++) {
        size_t ngrams = 0;
        for (int o = 0; o < orders; o++) {
            int kind = o >= char_order, n = kind ? o - char_order + 1 : o + 1;
            size_t length = corpus.unit_start[kind][t + 1] - corpus.unit_start[kind][t];
            totals[t * orders + o] = length >= (size_t)n ? (uint32_t)(length - n + 1) : 0;
            ngrams += totals[t * orders + o];
        }
        if (t >= rows) reference_ngrams += ngrams;
        if (ngrams > longest) longest = ngrams;
    }
    matches = calloc(columns * (size_t)orders + 1, sizeof(uint32_t));
    seen = malloc((base[orders] + 1) * sizeof(uint32_t));
    where = malloc((base[orders] + 1) * sizeof(uint32_t));
    first = calloc(base[orders] + 2, sizeof(uint32_t));
    postings = malloc((reference_ngrams + 1) * sizeof(Posting));
    entries = malloc((longest + 1) * sizeof(Posting));
    if (!matches || !seen || !where || !first || !postings || !entries) goto done;

    /* postings: how many references hold each row, then every reference's distinct rows in reference order */
    memset(seen, 0xFF, (base[orders] + 1) * sizeof(uint32_t));
    for (size_t j = 0; j < columns; j++) {
        size_t distinct = distinct_ngrams(&corpus, rows + j, char_order, orders, base, (uint32_t)j, seen, where, entries);
        for (size_t e = 0; e < distinct; e++) first[entries[e].reference + 1]++;
    }
    for (size_t row = 0; row < base[orders]; row++) first[row + 1] += first[row];
    memset(seen, 0xFF, (base[orders] + 1) * sizeof(uint32_t));
    for (size_t j = 0; j < columns; j++) {
        size_t distinct = distinct_ngrams(&corpus, rows + j, char_order, orders, base, (uint32_t)j, seen, where, entries);
        for (size_t e = 0; e < distinct; e++) {
            Posting *posting = &postings[first[entries[e].reference]++];
            posting->reference = (uint32_t)j;
            posting->count = entries[e].count;
        }
    }
    for (size_t row = base[orders]; row > 0; row--) first[row] = first[row - 1]; /* back to each row's start */
    first[0] = 0;

    /* each hypothesis: walk the postings of its distinct n-grams, then score its row */
    memset(seen, 0xFF, (base[orders] + 1) * sizeof(uint32_t));
    size_t unpaused = 0;
    for (size_t i = 0; i < rows; i++) {
        if ((unpaused += columns + 1) >= PAIRS_PER_PAUSE) {
            unpaused = 0;
            if (pause != NULL && pause(context)) {
                status = 1;
                goto done;
            }
        }
        size_t distinct = distinct_ngrams(&corpus, i, char_order, orders, base, (uint32_t)i, seen, where, entries);
        memset(matches, 0, columns * (size_t)orders * sizeof(uint32_t));
        for (size_t e = 0; e < distinct; e++) {
            const size_t row = entries[e].reference;
            const uint32_t mine = entries[e].count;
            int o = 0;
            while (row >= base[o + 1]) o++;
            for (uint32_t k = first[row]; k < first[row + 1]; k++) {
                const Posting posting = postings[k];
                matches[(size_t)posting.reference * orders + o] += mine < posting.count ? mine : posting.count;
            }
        }
        const uint32_t *hyp = totals + i * (size_t)orders;
        for (size_t j = 0; j < columns; j++) {
            const uint32_t *ref = totals + (rows + j) * (size_t)orders;
            Double2 value = pair_score(scoring, orders, hyp, ref, matches + j * (size_t)orders);
            scores[i * columns + j] = value.hi;
            if (near_midpoint(value, scoring->tolerance) && flag(flagged, i * columns + j) < 0) goto done;
        }
    }
    status = 0;
done:
    free(totals);
    free(matches);
    free(seen);
    free(where);
    free(first);
    free(postings);
    free(entries);
    corpus_free(&corpus);
    work_release(&work);
    return status;
}
