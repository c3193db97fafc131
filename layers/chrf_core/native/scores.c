/*
 * Scores in double-double arithmetic (about 106 bits, every quantity positive, so relative errors only add up: far
 * below 2^-90), rounded once to the nearest double. That is the correctly rounded value of the exact fraction unless
 * the exact value lies within the error bound of a midpoint between two doubles; such scores are flagged for the
 * caller, which computes them exactly.
 */
#include "mbr.h"

#include <stdlib.h>
#include <string.h>

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
static inline int effective(double hyp, double ref) { return hyp > 0 && ref > 0; }

/* F-beta of precision P = match / hyp and recall R = match / ref: (1 + b^2) P R / (b^2 P + R) is
   (1 + b^2) match / (b^2 ref + hyp). Any P = a / c and R = b / d take this form over the common numerator a b
   (match = a b, hyp = c b, ref = d a), which is how the averages use it. */
static inline Double2 f_beta(double b2, Double2 hyp, Double2 ref, Double2 match) {
    return d2_div(d2_mul(d2_of(1 + b2), match), d2_add(d2_mul(d2_of(b2), ref), hyp));
}

/* Every count is an integer below 2^53 (exact as a double); products and sums of them are formed exactly. */
Double2 chrf_score(const Scoring *scoring, int orders, const double *hyp, const double *ref, const double *matches) {
    const double b2 = scoring->beta_squared;
    Double2 zero = d2_of(0.0), f_sum = zero, sp = zero, sr = zero;
    int effective_orders = 0;
    for (int o = 0; o < orders; o++) {
        if (!effective(hyp[o], ref[o])) continue;
        effective_orders++;
        if (!matches[o]) continue; /* adds 0 to every sum */
        if (scoring->per_order_f) {
            f_sum = d2_add(f_sum, f_beta(b2, d2_of(hyp[o]), d2_of(ref[o]), d2_of(matches[o])));
        } else {
            sp = d2_add(sp, d2_div(d2_of(matches[o]), d2_of(hyp[o])));
            sr = d2_add(sr, d2_div(d2_of(matches[o]), d2_of(ref[o])));
        }
    }
    if (scoring->per_order_f) /* 100 / orders * the sum of the orders' F (an order without matches adds 0) */
        return f_sum.hi == 0.0 ? zero : d2_div(d2_mul(f_sum, d2_of(100.0)), d2_of(orders));
    if (sp.hi == 0.0) return zero;
    /* P = sP / E and R = sR / E over the E effective orders, over their common numerator sP sR */
    Double2 e = d2_of(effective_orders);
    return d2_mul(f_beta(b2, d2_mul(e, sr), d2_mul(e, sp), d2_mul(sp, sr)), d2_of(100.0));
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
