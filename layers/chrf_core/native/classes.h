/*
 * Classes of n-grams continued order by order: the one refinement step (refine) that counting.c (one hypothesis
 * against one reference), systems.c (several systems' hypotheses against one reference) and corpus_ids.c (every
 * text of an MBR call) all take; where counting.c's and systems.c's passes start (count_by_code: the low orders by
 * histogram, then the first classes), and code points ranked densely.
 */
#ifndef CHRF_CLASSES_H
#define CHRF_CLASSES_H

#include "kernel.h"

#include <string.h>

/* A fresh, empty direct table (its slots are valid only when stamped with the current stamp). */
static inline void new_direct_generation(Work *work) {
    if (++work->direct_stamp == 0) {
        for (size_t i = 0; i < DIRECT_SLOTS; i++) work->direct[i].stamp = 0;
        work->direct_stamp = 1;
    }
}

/* A class of the next order with no occurrences yet. */
static inline void clear_class(ClassInfo *next, uint32_t id) {
    next[id].count[0] = next[id].count[1] = 0;
    next[id].memo[0] = NO_CLASS;
}

/*
 * The one class-refinement step of the kernel (counting.c, systems.c, corpus_ids.c): the class at the next order of
 * an n-gram of class `c` followed by `unit`, a new id (*ids, counted up) for a pair not seen before. `memo` is the
 * class's [the unit its first member continued with, or NO_CLASS; the class that made]: the members that continue
 * alike (a passage that repeats) touch no table, and a class's first continuation is kept in the memo alone. The
 * others look the pair up in the direct table when given one (`direct`: slot c * alphabet + unit, valid while
 * stamped `stamp`), else in the pair table. With `find` nothing is created: a pair not there is NO_CLASS (the
 * side counted second looks up only what the first has).
 * A new class's ClassInfo at the next order is cleared when `next` is given.
 */
static inline uint32_t refine(uint32_t memo[2], PairTable *pairs, DirectSlot *direct, uint32_t stamp,
                              uint32_t alphabet, uint32_t c, uint32_t unit, uint32_t *ids, int find,
                              ClassInfo *next) {
    if (memo[0] == unit) return memo[1];
    uint32_t id;
    if (memo[0] == NO_CLASS) {
        if (find) return NO_CLASS;
        memo[0] = unit;
        id = memo[1] = (*ids)++;
    } else if (direct != NULL) {
        DirectSlot *slot = &direct[c * alphabet + unit];
        if (slot->stamp == stamp) return slot->value;
        if (find) return NO_CLASS;
        slot->stamp = stamp;
        id = slot->value = (*ids)++;
    } else {
        if (find) return find_pair(pairs, c, unit);
        const uint32_t fresh = *ids;
        id = intern_pair(pairs, c, unit, ids);
        if (id != fresh) return id;
    }
    if (next != NULL) clear_class(next, id);
    return id;
}

/* refine for one segment's classes (counting.c, systems.c): the direct table while classes * alphabet fits it
   (`direct`), a new class of the next order cleared. A member that continues as the first did returns before any
   of the tables' arguments are worked out (refine's first test, asked first here, where positions pass by the
   million). */
static inline uint32_t continuation(Work *work, int direct, uint32_t alphabet, ClassInfo *now, ClassInfo *next,
                                    uint32_t c, uint32_t unit, uint32_t *classes, int find) {
    if (now[c].memo[0] == unit) return now[c].memo[1];
    return refine(now[c].memo, &work->pairs, direct ? work->direct : NULL, work->direct_stamp, alphabet, c, unit,
                  classes, find, next);
}

/*
 * The texts one count refines: text 0 creates the classes (counting.c: the side with fewer code points; systems.c:
 * the reference), every other text only looks its n-grams up among them (an n-gram text 0 lacks cannot match).
 * Units are dense ranks: text 0's are 0..alphabet-1, and every other text's unit that text 0 lacks is `alphabet`
 * itself (rank_known, as_foreign), so an n-gram of order n is exactly a number of n digits in base alphabet + 1
 * (base alphabet when no text has such a unit: `foreign`).
 */
typedef struct {
    const uint32_t *const *units;
    const size_t *lengths;
    const size_t *bases;  /* text k's classes and alive positions: at work->cls + bases[k], work->alive + bases[k] */
    size_t *alive_counts; /* per text: how many of its positions can still match */
    size_t texts;
    uint32_t alphabet;
    int foreign;       /* whether another text has a unit text 0 lacks */
    size_t *identical; /* per text, or NULL: text k is text 0 itself (counted apart: every n-gram matches) */
} Segment;

/* Every unit of a text other than text 0 that text 0 lacks (numbered from `alphabet` on) made `alphabet`: whether
   there was one. */
static inline int as_foreign(uint32_t *units, size_t length, uint32_t alphabet) {
    uint32_t highest = 0;
    for (size_t i = 0; i < length; i++) {
        highest = units[i] > highest ? units[i] : highest;
        units[i] = units[i] < alphabet ? units[i] : alphabet;
    }
    return length && highest >= alphabet;
}

/* The units of text k that the passes count: none when it is counted apart. */
static inline size_t counted_length(const Segment *t, size_t k) {
    return t->identical != NULL && t->identical[k] ? 0 : t->lengths[k];
}

/* Order 1 for an alphabet too large for the histograms (over DIRECT_SLOTS units): a unit's class is the unit itself
   (classes_out: the alphabet). Returns 1, the start order. */
static inline int classes_of_units(Work *work, const Segment *t, uint32_t *classes_out) {
    ClassInfo *info = work->info[0];
    for (uint32_t c = 0; c < t->alphabet; c++) {
        info[c].count[0] = info[c].count[1] = 0;
        info[c].memo[0] = NO_CLASS;
    }
    for (size_t k = 0; k < t->texts; k++) {
        const uint32_t *units = t->units[k];
        const size_t length = counted_length(t, k);
        for (size_t i = 0; i < length; i++)
            if (units[i] < t->alphabet) info[units[i]].count[k != 0]++;
    }
    for (size_t k = 0; k < t->texts; k++) {
        const uint32_t *units = t->units[k];
        uint32_t *cls = work->cls + t->bases[k], *alive = work->alive + t->bases[k];
        const size_t length = counted_length(t, k);
        size_t kept = 0;
        for (size_t i = 0; i < length; i++) {
            const uint32_t unit = units[i];
            if (unit >= t->alphabet || !info[unit].count[k == 0]) continue;
            cls[i] = unit;
            alive[kept++] = (uint32_t)i;
            if (k == 0) work->partner[0][unit] = (uint32_t)i;
        }
        t->alive_counts[k] = kept;
    }
    *classes_out = t->alphabet;
    return 1;
}

/* The codes of the n-grams at `positions` (order 1, `first`: the unit; above: the code of order n - 1 times the base,
   plus the next unit), each counted in histogram. */
static inline void count_codes(uint32_t *codes, const uint32_t *unit, size_t positions, uint32_t base, int first,
                               uint32_t *histogram) {
    if (first) {
        for (size_t i = 0; i < positions; i++) histogram[codes[i] = unit[i]]++;
    } else {
        for (size_t i = 0; i < positions; i++) histogram[codes[i] = codes[i] * base + unit[i]]++;
    }
}

/* count_codes for a text against text 0's counts (counts_0) into counts_k: its clipped matches, the sum over codes
   of min(text 0's count, its count), counted as the occurrences that come while its count is below text 0's. */
static inline int64_t match_codes(uint32_t *codes, const uint32_t *unit, size_t positions, uint32_t base, int first,
                                  const uint32_t *counts_0, uint32_t *counts_k) {
    int64_t matches = 0;
    if (first) {
        for (size_t i = 0; i < positions; i++) {
            const uint32_t code = codes[i] = unit[i];
            matches += counts_k[code]++ < counts_0[code];
        }
    } else {
        for (size_t i = 0; i < positions; i++) {
            const uint32_t code = codes[i] = codes[i] * base + unit[i];
            matches += counts_k[code]++ < counts_0[code];
        }
    }
    return matches;
}

/*
 * Where the passes start (counting.c, systems.c): orders 1..start-1 counted without classes. While base^n is small
 * (base: alphabet + 1, or alphabet; Segment), an n-gram is exactly the number whose digits are its units, so its
 * occurrences are a histogram entry (work->histogram: text 0's, then each other text's in turn, left cleared) and a
 * low order costs one sequential pass; text k's matches at order n go to out[stride * (k - 1) + 3 * (n - 1) + 2].
 * At the start order, the n-grams text 0 shares with another text become the classes the passes continue from:
 * info and partner (text 0's position) of buffer 0, with count[0] text 0's occurrences and count[1] the other
 * texts' together; the positions of such n-grams alive (alive_counts), each with its class. The start order in
 * *start_out (0 when nothing matches from some order on); 0, or 1 when interrupted.
 */
static inline int count_by_code(Work *work, const Segment *t, int orders, int64_t *out, size_t stride,
                                uint32_t *classes_out, int *start_out) {
    const uint64_t base = (uint64_t)t->alphabet + (t->foreign != 0);
    size_t total = 0;
    for (size_t k = 0; k < t->texts; k++) total += t->lengths[k];
    const size_t limit = total < DIRECT_SLOTS ? total : DIRECT_SLOTS;
    int start = 1;
    for (uint64_t span = base; start < orders && span * base <= limit; span *= base) start++;
    if (base > DIRECT_SLOTS) { /* else base <= text 0's length + 1 */
        *start_out = classes_of_units(work, t, classes_out);
        return 0;
    }
    uint32_t *const counts_0 = work->histogram[0], *const counts_k = work->histogram[1];
    size_t span = 1;
    for (int n = 1; n <= start; n++) {
        span *= base;
        int64_t matched = 0;
        for (size_t k = 0; k < t->texts; k++) {
            const size_t length = counted_length(t, k), positions = ngrams_in(length, n);
            const uint32_t *unit = t->units[k] + n - 1;
            uint32_t *codes = work->cls + t->bases[k];
            t->alive_counts[k] = positions;
            if (k == 0 || n == start) { /* text 0's counts; at the start order, the others' together */
                count_codes(codes, unit, positions, (uint32_t)base, n == 1, k ? counts_k : counts_0);
                continue;
            }
            int64_t matches = 0; /* summed over the codes or over the positions, whichever are fewer */
            if (span <= positions) {
                count_codes(codes, unit, positions, (uint32_t)base, n == 1, counts_k);
                for (size_t c = 0; c < span; c++) matches += counts_0[c] < counts_k[c] ? counts_0[c] : counts_k[c];
                memset(counts_k, 0, span * sizeof(uint32_t));
            } else {
                matches = match_codes(codes, unit, positions, (uint32_t)base, n == 1, counts_0, counts_k);
                for (size_t i = 0; i < positions; i++) counts_k[codes[i]] = 0;
            }
            out[stride * (k - 1) + 3 * (n - 1) + 2] += matches;
            matched += matches;
        }
        if (stop_after(work, total)) return 1;
        if (n == start) break;
        memset(counts_0, 0, span * sizeof(uint32_t));
        if (matched == 0) {
            *start_out = 0;
            return 0;
        }
    }
    ClassInfo *info = work->info[0];
    uint32_t classes = 0;
    for (size_t c = 0; c < span; c++) { /* span <= limit <= the positions: linear */
        if (counts_0[c] && counts_k[c]) {
            info[classes] = (ClassInfo){{counts_0[c], counts_k[c]}, {NO_CLASS, 0}};
            counts_0[c] = classes++; /* from here on: the code's class, or NO_CLASS */
        } else {
            counts_0[c] = NO_CLASS;
        }
    }
    for (size_t k = 0; k < t->texts; k++) {
        uint32_t *codes = work->cls + t->bases[k], *alive = work->alive + t->bases[k];
        size_t kept = 0;
        for (size_t i = 0; i < t->alive_counts[k]; i++) {
            const uint32_t id = counts_0[codes[i]];
            if (id == NO_CLASS) continue;
            codes[i] = id;
            alive[kept++] = (uint32_t)i;
            if (k == 0) work->partner[0][id] = (uint32_t)i;
        }
        t->alive_counts[k] = kept;
    }
    memset(counts_0, 0, span * sizeof(uint32_t));
    memset(counts_k, 0, span * sizeof(uint32_t));
    *classes_out = classes;
    *start_out = classes ? start : 0;
    return 0;
}

/* Code points as dense ranks, in place, equal code points equal ranks (continuing the numbering from *ranks). */
static inline void rank_code_points(Work *work, uint32_t *units, size_t length, uint32_t *ranks) {
    for (size_t i = 0; i < length; i++) {
        DirectSlot *slot = &work->ranks[units[i]];
        if (slot->stamp != work->rank_stamp) {
            slot->stamp = work->rank_stamp;
            slot->value = (*ranks)++;
        }
        units[i] = slot->value;
    }
}

/* The code points of a text other than text 0 as text 0's ranks (rank_code_points gave them), in place, and
   `alphabet` for one that text 0 lacks (Segment): whether there was one. */
static inline int rank_known(const Work *work, uint32_t *units, size_t length, uint32_t alphabet) {
    int foreign = 0;
    for (size_t i = 0; i < length; i++) {
        const DirectSlot *slot = &work->ranks[units[i]];
        if (slot->stamp == work->rank_stamp) {
            units[i] = slot->value;
        } else {
            units[i] = alphabet;
            foreign = 1;
        }
    }
    return foreign;
}

static inline void new_rank_generation(Work *work) {
    if (++work->rank_stamp == 0) {
        for (size_t c = 0; c < CODE_POINTS; c++) work->ranks[c].stamp = 0;
        work->rank_stamp = 1;
    }
}

#endif
