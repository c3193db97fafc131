/*
 * Double-double arithmetic (about 106 bits: a value is hi + lo, |lo| at most half an ulp of hi), Dekker's and
 * Knuth's error-free transformations. Every quantity the scores use is positive, so relative errors only add up.
 */
#ifndef CHRF_DOUBLE2_H
#define CHRF_DOUBLE2_H

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

/* a b = hi + lo exactly: with a fused multiply-add where the hardware has one (arm64), else Dekker's splitting;
   both give the same two doubles. */
static inline Double2 two_product(double a, double b) {
#ifdef __FP_FAST_FMA
    double p = a * b;
    Double2 r = {p, __builtin_fma(a, b, -p)};
    return r;
#else
    double p = a * b, ta = 134217729.0 * a, tb = 134217729.0 * b;
    double ah = ta - (ta - a), al = a - ah, bh = tb - (tb - b), bl = b - bh;
    Double2 r = {p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
    return r;
#endif
}

static inline Double2 d2_add(Double2 a, Double2 b) {
    Double2 s = two_sum(a.hi, b.hi), t = two_sum(a.lo, b.lo);
    s = quick_two_sum(s.hi, s.lo + t.hi);
    return quick_two_sum(s.hi, s.lo + t.lo);
}

/* a + b for a, b >= 0 (no cancellation, so one two_sum keeps the relative error near 2^-104). */
static inline Double2 d2_add_positive(Double2 a, Double2 b) {
    Double2 s = two_sum(a.hi, b.hi);
    return quick_two_sum(s.hi, s.lo + (a.lo + b.lo));
}

static inline Double2 d2_mul(Double2 a, Double2 b) {
    Double2 p = two_product(a.hi, b.hi);
    return quick_two_sum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}

static inline Double2 d2_of(double a) {
    Double2 r = {a, 0.0};
    return r;
}

static inline Double2 d2_div(Double2 a, Double2 b) {
    double q1 = a.hi / b.hi;
    Double2 p = d2_mul(b, d2_of(-q1));
    Double2 r = d2_add(a, p);
    double q2 = r.hi / b.hi;
    p = d2_mul(b, d2_of(-q2));
    r = d2_add(r, p);
    double q3 = r.hi / b.hi;
    return d2_add(quick_two_sum(q1, q2), d2_of(q3));
}

/* a < b for normalized values */
static inline int d2_less(Double2 a, Double2 b) { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo); }

#endif
