/*
 * Classes of n-grams continued order by order: the one refinement step (refine) that counting.c (one hypothesis
 * against one reference), systems.c (several systems' hypotheses against one reference) and corpus_ids.c (every
 * text of an MBR call) all take, and code points ranked densely.
 */
#ifndef CHRF_CLASSES_H
#define CHRF_CLASSES_H

#include "kernel.h"

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
   (`direct`), a new class of the next order cleared. */
static inline uint32_t continuation(Work *work, int direct, uint32_t alphabet, ClassInfo *now, ClassInfo *next,
                                    uint32_t c, uint32_t unit, uint32_t *classes, int find) {
    return refine(now[c].memo, &work->pairs, direct ? work->direct : NULL, work->direct_stamp, alphabet, c, unit,
                  classes, find, next);
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

static inline void new_rank_generation(Work *work) {
    if (++work->rank_stamp == 0) {
        for (size_t c = 0; c < CODE_POINTS; c++) work->ranks[c].stamp = 0;
        work->rank_stamp = 1;
    }
}

#endif
