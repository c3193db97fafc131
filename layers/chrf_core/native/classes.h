/*
 * What counting.c (one hypothesis against one reference) and systems.c (several systems' hypotheses against one
 * reference) share: classes of n-grams continued order by order, and code points ranked densely.
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
    next[id].memo_unit = NO_CLASS;
}

/* A new class of the next order, with no occurrences yet. */
static inline uint32_t new_class(ClassInfo *next, uint32_t *classes) {
    uint32_t id = (*classes)++;
    clear_class(next, id);
    return id;
}

/*
 * The class at the next order of an n-gram of class `c` followed by `unit`, new ids dense from *classes. Each class
 * remembers the continuation of its first member, so the members that continue alike (a passage that repeats)
 * touch no table; the others look the pair up in the direct table while classes * alphabet fits it, else in the
 * hash table. Only the side counted first creates classes; `find` looks one up for the other side (NO_CLASS: the
 * first side has no such n-gram).
 */
static inline uint32_t continuation(Work *work, int direct, uint32_t alphabet, ClassInfo *now, ClassInfo *next,
                                    uint32_t c, uint32_t unit, uint32_t *classes, int find) {
    if (now[c].memo_unit == unit) return now[c].memo_class;
    if (now[c].memo_unit == NO_CLASS) {
        if (find) return NO_CLASS;
        now[c].memo_unit = unit;
        return now[c].memo_class = new_class(next, classes);
    }
    if (direct) {
        DirectSlot *slot = &work->direct[c * alphabet + unit];
        if (slot->stamp != work->direct_stamp) {
            if (find) return NO_CLASS;
            slot->stamp = work->direct_stamp;
            slot->value = new_class(next, classes);
        }
        return slot->value;
    }
    if (find) return find_pair(work, c, unit);
    const uint32_t fresh = *classes, child = intern_pair(work, c, unit, classes);
    if (child == fresh) clear_class(next, child);
    return child;
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
