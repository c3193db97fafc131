/*
 * Scores in double-double arithmetic (about 106 bits, every quantity positive, so relative errors only add up: far
 * below 2^-90), rounded once to the nearest double. That is the correctly rounded value of the exact fraction unless
 * the exact value lies within the error bound of a midpoint between two doubles; such scores are flagged for the
 * caller, which computes them exactly.
 */
#include "mbr.h"

#include <stdlib.h>
#include <string.h>

/* Whether rounding `value` (normalized: hi is lo + hi rounded) to hi may differ from rounding the exact value, which
   lies within hi * tolerance of it: true when lo is that close to half the gap to hi's neighbour on lo's side. */
int near_midpoint(Double2 value, double tolerance) {
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

/* Whether an order counts in the averages: both sides have n-grams of it. */
static inline int effective(Double2 hyp, Double2 ref) { return hyp.hi > 0 && ref.hi > 0; }

/* F-beta of precision P = match / hyp and recall R = match / ref: (1 + b^2) P R / (b^2 P + R) is
   (1 + b^2) match / (b^2 ref + hyp). Any P = a / c and R = b / d take this form over the common numerator a b
   (match = a b, hyp = c b, ref = d a), which is how the averages use it. */
static inline Double2 f_beta(double b2, Double2 hyp, Double2 ref, Double2 match) {
    return d2_div(d2_mul(d2_of(1 + b2), match), d2_add_positive(d2_mul(d2_of(b2), ref), hyp));
}

/* 1 / count in double-double (0 for 0): q = 1 / count rounded, then the remainder 1 - q count, exact from the
   error-free product q count, divided by count. Relative error about 2^-105. */
Double2 reciprocal(double count) {
    if (count == 0.0) return d2_of(0.0);
    const double q = 1.0 / count;
    const Double2 p = two_product(q, count);
    return quick_two_sum(q, ((1.0 - p.hi) - p.lo) / count);
}

/* A ratio count / whole, from whole's reciprocal when the caller has it (many pairs share a side). */
static inline Double2 ratio(Double2 count, Double2 whole, const Double2 *inverse, int o) {
    return inverse ? d2_mul(inverse[o], count) : d2_div(count, whole);
}

/* Products and sums of the counts are formed in double-double: exactly for integers below 2^53. */
Double2 chrf_score_of(const Scoring *scoring, int orders, const Double2 *hyp, const Double2 *ref,
                      const Double2 *matches, const Double2 *hyp_inverse, const Double2 *ref_inverse) {
    const double b2 = scoring->beta_squared;
    Double2 zero = d2_of(0.0), f_sum = zero, sp = zero, sr = zero;
    int effective_orders = 0;
    for (int o = 0; o < orders; o++) {
        if (!effective(hyp[o], ref[o])) continue;
        effective_orders++;
        if (matches[o].hi == 0.0) continue; /* adds 0 to every sum */
        if (scoring->per_order_f) {
            f_sum = d2_add_positive(f_sum, f_beta(b2, hyp[o], ref[o], matches[o]));
        } else {
            sp = d2_add_positive(sp, ratio(matches[o], hyp[o], hyp_inverse, o));
            sr = d2_add_positive(sr, ratio(matches[o], ref[o], ref_inverse, o));
        }
    }
    if (scoring->per_order_f) /* 100 / orders * the sum of the orders' F (an order without matches adds 0) */
        return f_sum.hi == 0.0 ? zero : d2_div(d2_mul(f_sum, d2_of(100.0)), d2_of(orders));
    if (sp.hi == 0.0) return zero;
    /* P = sP / E and R = sR / E over the E effective orders, over their common numerator sP sR */
    Double2 e = d2_of(effective_orders);
    return d2_mul(f_beta(b2, d2_mul(e, sr), d2_mul(e, sp), d2_mul(sp, sr)), d2_of(100.0));
}

/* Every count is an integer below 2^53 (exact as a double). */
Double2 chrf_score(const Scoring *scoring, int orders, const double *hyp, const double *ref, const double *matches) {
    Double2 values[3 * MAX_ORDERS];
    for (int o = 0; o < orders; o++) {
        values[o] = d2_of(hyp[o]);
        values[orders + o] = d2_of(ref[o]);
        values[2 * orders + o] = d2_of(matches[o]);
    }
    return chrf_score_of(scoring, orders, values, values + orders, values + 2 * orders, NULL, NULL);
}

int flag(Flagged *flagged, size_t index) {
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
