/*
 * One segment's reference against the hypotheses of several systems, the reference counted once (no Python here).
 *
 * Only n-grams of the reference can match, so the reference's positions create the classes, order by order (as in
 * counting.c: a class at the next order from the pair (class, next unit)), and every system's positions only look
 * theirs up. A system's matches at an order are the sum over its classes of min(the reference's count, its
 * count). A reference position stays while some system shares its class; a system's position while the reference
 * has its class. An n-gram found once in the reference and once in a system is settled for that system by comparing
 * what follows both (as counting.c does), and a system identical to the reference matches all its n-grams. Each
 * order is one pass over the positions still alive, so time is linear in the texts.
 */
#include "classes.h"

#include <string.h>

/* One unit sequence per text: the reference [0], then each system's hypothesis. */
typedef struct {
    const uint32_t *const *units;
    const size_t *lengths;
    size_t texts;
    uint32_t alphabet; /* the reference's units are exactly 0..alphabet-1; a hypothesis unit at or above cannot match */
    size_t *identical; /* per text: whether it is the reference itself (its matches are then its n-grams) */
} Shared;

#define SHARED 0x80000000u /* in count[1]: some system has the class and has not settled it (a count stays below) */

/* The n-grams of order 1 as classes: a unit's class is the unit itself (the reference's are 0..alphabet-1). */
static void classes_of_units(Work *work, const Shared *t, const size_t *bases, size_t *alive_counts) {
    ClassInfo *info = work->info[0];
    uint32_t *partner = work->partner[0];
    for (uint32_t c = 0; c < t->alphabet; c++) {
        info[c].count[0] = info[c].count[1] = 0;
        info[c].memo[0] = NO_CLASS;
    }
    for (size_t k = 0; k < t->texts; k++) {
        const uint32_t *units = t->units[k];
        uint32_t *cls = work->cls + bases[k], *alive = work->alive + bases[k];
        size_t kept = 0;
        for (size_t i = 0; i < t->lengths[k] && !t->identical[k]; i++) {
            if (units[i] >= t->alphabet) continue;
            cls[i] = units[i];
            alive[kept++] = (uint32_t)i;
            if (k == 0) {
                info[units[i]].count[0]++;
                partner[units[i]] = (uint32_t)i;
            }
        }
        alive_counts[k] = kept;
    }
}

/*
 * Orders 1..start-1 counted without classes (as counting.c's count_by_code): while alphabet^n is small, an n-gram
 * is exactly the number whose base-`alphabet` digits are its units, so its occurrences are a histogram entry (left
 * cleared), and a low order costs one sequential pass. At the start order, the reference's n-grams become the
 * classes the passes continue from. Returns the start order, or 0 when nothing matches from some order on.
 */
static int count_by_code(Work *work, const Shared *t, const size_t *bases, size_t *alive_counts, int start,
                         size_t stride, int64_t *out, uint32_t *classes_out) {
    const uint32_t alphabet = t->alphabet;
    uint32_t *const counts_r = work->histogram[0], *const counts_h = work->histogram[1];
    size_t span = 1;
    for (int n = 1; n <= start; n++) {
        span *= alphabet;
        for (size_t k = 0; k < t->texts; k++) { /* codes of n-grams; NO_CLASS where a unit is not the reference's */
            const uint32_t *unit = t->units[k] + n - 1;
            uint32_t *codes = work->cls + bases[k];
            const size_t positions = t->lengths[k] >= (size_t)n ? t->lengths[k] - n + 1 : 0;
            for (size_t i = 0; i < positions; i++) {
                const uint32_t before = n == 1 ? 0 : codes[i];
                codes[i] = unit[i] >= alphabet || before == NO_CLASS ? NO_CLASS : before * alphabet + unit[i];
            }
            alive_counts[k] = t->identical[k] ? 0 : positions;
        }
        const uint32_t *codes_r = work->cls;
        for (size_t i = 0; i < alive_counts[0]; i++) counts_r[codes_r[i]]++;
        if (n == start) break;
        int64_t matched = 0;
        for (size_t k = 1; k < t->texts; k++) {
            const uint32_t *codes = work->cls + bases[k];
            int64_t matches = 0;
            for (size_t i = 0; i < alive_counts[k]; i++)
                if (codes[i] != NO_CLASS) counts_h[codes[i]]++;
            for (size_t i = 0; i < alive_counts[k]; i++) {
                if (codes[i] == NO_CLASS || !counts_h[codes[i]]) continue;
                const uint32_t code = codes[i];
                matches += counts_r[code] < counts_h[code] ? counts_r[code] : counts_h[code];
                counts_h[code] = 0;
            }
            out[stride * (k - 1) + 3 * (n - 1) + 2] += matches;
            matched += matches;
        }
        memset(counts_r, 0, span * sizeof(uint32_t));
        if (matched == 0 || stop_after(work, alive_counts[0])) return 0;
    }
    ClassInfo *info = work->info[0];
    uint32_t classes = 0;
    for (size_t k = 0; k < t->texts; k++) {
        uint32_t *codes = work->cls + bases[k], *alive = work->alive + bases[k];
        size_t kept = 0;
        for (size_t i = 0; i < alive_counts[k]; i++) {
            const uint32_t code = codes[i];
            if (code == NO_CLASS) continue;
            if (!counts_h[code]) { /* from here on: the code's class + 1 */
                if (k) continue;   /* not the reference's */
                counts_h[code] = ++classes;
                info[classes - 1].count[0] = counts_r[code];
                info[classes - 1].count[1] = 0;
                info[classes - 1].memo[0] = NO_CLASS;
            }
            if (!k) work->partner[0][counts_h[code] - 1] = (uint32_t)i;
            codes[i] = counts_h[code] - 1;
            alive[kept++] = (uint32_t)i;
        }
        alive_counts[k] = kept;
    }
    memset(counts_r, 0, span * sizeof(uint32_t));
    memset(counts_h, 0, span * sizeof(uint32_t));
    *classes_out = classes;
    return classes ? start : 0;
}

/* Add the counts of orders 1..orders to out[stride * (text - 1) + 3 * (n - 1) + {0, 1, 2}] for every system. Buffers
   (cls, alive) are laid out text after text from `bases`; `alive_counts` holds one size per text. 0, or -1 when
   interrupted. */
static int count_shared(Work *work, const Shared *t, const size_t *bases, size_t *alive_counts, int orders,
                        size_t stride, int64_t *out) {
    const size_t length_r = t->lengths[0];
    size_t total = 0;
    for (size_t k = 0; k < t->texts; k++) total += t->lengths[k];
    for (size_t k = 1; k < t->texts; k++) {
        for (int n = 1; n <= orders; n++) {
            int64_t *at = out + stride * (k - 1) + 3 * (n - 1);
            at[0] += t->lengths[k] >= (size_t)n ? (int64_t)(t->lengths[k] - n + 1) : 0;
            at[1] += length_r >= (size_t)n ? (int64_t)(length_r - n + 1) : 0;
        }
    }
    if (length_r == 0 || t->texts < 2) return 0;
    for (size_t k = 1; k < t->texts; k++) {
        t->identical[k] = t->lengths[k] == length_r &&
                          memcmp(t->units[k], t->units[0], length_r * sizeof(uint32_t)) == 0;
        for (int n = 1; n <= orders && t->identical[k] && (size_t)n <= length_r; n++)
            out[stride * (k - 1) + 3 * (n - 1) + 2] += (int64_t)(length_r - n + 1);
    }
    const uint32_t alphabet = t->alphabet;
    const size_t limit = total < DIRECT_SLOTS ? total : DIRECT_SLOTS;
    int start = 1;
    for (uint64_t span = alphabet; start < orders && span * alphabet <= limit; span *= alphabet) start++;
    uint32_t classes = alphabet;
    if (start == 1) {
        classes_of_units(work, t, bases, alive_counts);
    } else if ((start = count_by_code(work, t, bases, alive_counts, start, stride, out, &classes)) == 0) {
        return stop_after(work, total) ? -1 : 0;
    }
    ClassInfo *info = work->info[0];
    int now = 0;
    for (int n = start;; n++) {
        ClassInfo *next = work->info[!now];
        const uint32_t *partner = work->partner[now];
        uint32_t *next_partner = work->partner[!now];
        const uint32_t *units_r = t->units[0];
        int64_t matched = 0;
        for (size_t k = 1; k < t->texts; k++) {
            const uint32_t *units = t->units[k];
            uint32_t *cls = work->cls + bases[k];
            const uint32_t *alive = work->alive + bases[k];
            int64_t *row = out + stride * (k - 1);
            for (size_t a = 0; a < alive_counts[k]; a++) info[cls[alive[a]]].count[1]++;
            int64_t matches = 0;
            for (size_t a = 0; a < alive_counts[k]; a++) {
                const uint32_t j = alive[a];
                ClassInfo *c = &info[cls[j]];
                const uint32_t here = c->count[1] & ~SHARED;
                if (!here) continue;
                matches += c->count[0] < here ? c->count[0] : here;
                if (c->count[0] == 1 && here == 1) { /* a unique pair: it matches for as long as both continue alike */
                    const size_t i = partner[cls[j]];
                    for (size_t same = 0; n + (int)same < orders && i + n + same < length_r &&
                                          j + n + same < t->lengths[k] && units_r[i + n + same] == units[j + n + same];
                         same++)
                        row[3 * (n + same) + 2]++;
                    c->count[1] &= SHARED;
                    cls[j] = NO_CLASS;
                } else {
                    c->count[1] = SHARED;
                }
            }
            row[3 * (n - 1) + 2] += matches;
            matched += matches;
        }
        if (matched == 0 || n == orders) break;
        const int direct = (uint64_t)classes * alphabet <= DIRECT_SLOTS;
        if (direct)
            new_direct_generation(work);
        else
            pair_table_generation(&work->pairs, alive_counts[0]);
        uint32_t next_classes = 0;
        size_t left = 0; /* systems' positions that go on */
        for (size_t k = 0; k < t->texts; k++) {
            const uint32_t *units = t->units[k];
            const size_t length = t->lengths[k];
            uint32_t *cls = work->cls + bases[k], *alive = work->alive + bases[k];
            size_t kept = 0;
            for (size_t a = 0; a < alive_counts[k]; a++) {
                if (poll(work, a)) return -1;
                const uint32_t i = alive[a], c = cls[i];
                if (c == NO_CLASS || i + (size_t)n >= length || units[i + n] >= alphabet) continue;
                if (k == 0 && !(info[c].count[1] & SHARED)) continue;
                const uint32_t child =
                    continuation(work, direct, alphabet, info, next, c, units[i + n], &next_classes, k != 0);
                if (child == NO_CLASS) continue;
                cls[i] = child;
                if (k == 0) {
                    next[child].count[0]++;
                    next_partner[child] = i;
                }
                alive[kept++] = i;
            }
            alive_counts[k] = kept;
            if (k) left += kept;
        }
        classes = next_classes;
        info = next;
        now = !now;
        if (alive_counts[0] == 0 || left == 0) break;
    }
    return 0;
}

int count_systems(Work *work, const size_t *lengths, size_t texts, int char_order, int word_order, int keep_whitespace,
                  size_t *scratch, const uint32_t **units, int64_t *out, size_t stride) {
    const size_t row = 3 * (size_t)(char_order + word_order);
    for (size_t k = 1; k < texts; k++) memset(out + stride * (k - 1), 0, row * sizeof(int64_t));
    uint32_t *raw = work->raw;
    size_t *starts = scratch, *bases = scratch + texts, *kept = scratch + 2 * texts, total = 0;
    for (size_t k = 0; k < texts; k++) {
        starts[k] = bases[k] = total;
        total += lengths[k];
    }
    Shared t = {units, kept, texts, 0, scratch + 4 * texts};
    t.identical[0] = 0;
    if (word_order) { /* first: the character orders then rewrite raw in place */
        tokens_generation(work, raw, distinct_tokens_bound(total, texts));
        uint32_t tokens = 0;
        size_t at = 0;
        for (size_t k = 0; k < texts; k++) {
            kept[k] = tokenize(work, raw + starts[k], lengths[k], work->units + at, &tokens);
            if (kept[k] == TOKENIZE_INTERRUPTED) return -1;
            units[k] = work->units + at;
            bases[k] = at;
            at += kept[k];
            if (k == 0) t.alphabet = tokens;
        }
        if (stop_after(work, total) ||
            count_shared(work, &t, bases, scratch + 3 * texts, word_order, stride, out + 3 * char_order) < 0)
            return -1;
    }
    if (!char_order) return 0;
    size_t at = 0;
    for (size_t k = 0; k < texts; k++) { /* in place: each text's characters, one text after the other */
        bases[k] = at;
        for (size_t i = starts[k]; i < starts[k] + lengths[k]; i++)
            if (keep_whitespace || !is_space(raw[i])) raw[at++] = raw[i];
        kept[k] = at - bases[k];
        units[k] = raw + bases[k];
    }
    new_rank_generation(work);
    uint32_t ranks = 0;
    for (size_t k = 0; k < texts; k++) {
        rank_code_points(work, raw + bases[k], kept[k], &ranks);
        if (k == 0) t.alphabet = ranks;
    }
    if (stop_after(work, total)) return -1;
    return count_shared(work, &t, bases, scratch + 3 * texts, char_order, stride, out);
}
