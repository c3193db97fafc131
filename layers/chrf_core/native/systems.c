/*
 * One segment's reference against the hypotheses of several systems, the reference counted once (no Python here).
 *
 * Only n-grams of the reference can match, so the reference's positions create the classes, order by order (as in
 * counting.c: a class at the next order from the pair (class, next unit)), and every system's positions only look
 * theirs up. A system's matches at an order are the sum over its classes of min(the reference's count, its
 * count). A reference position stays while some system shares its class; a system's position while the reference
 * has its class. The low orders are counted by histogram, as for one segment (classes.h's count_by_code, with the
 * reference as the text that creates the classes). An n-gram found once in the reference and once in a system is
 * settled for that system by comparing what follows both (as counting.c does), and a system identical to the
 * reference matches all its n-grams. Each order is one pass over the positions still alive, so time is linear in the
 * texts.
 */
#include "classes.h"

#include <string.h>

#define SHARED 0x80000000u /* in count[1]: some system has the class and has not settled it (a count stays below) */

/* Add the counts of orders 1..orders to out[stride * (text - 1) + 3 * (n - 1) + {0, 1, 2}] for every system. Buffers
   (cls, alive) are laid out text after text from `bases`; `alive_counts` holds one size per text. 0, or 1 when
   interrupted. */
static int count_shared(Work *work, const Segment *t, int orders, size_t stride, int64_t *out) {
    const size_t *const bases = t->bases;
    size_t *const alive_counts = t->alive_counts;
    const size_t length_r = t->lengths[0];
    for (size_t k = 1; k < t->texts; k++) {
        for (int n = 1; n <= orders; n++) {
            int64_t *at = out + stride * (k - 1) + 3 * (n - 1);
            at[0] += (int64_t)ngrams_in(t->lengths[k], n);
            at[1] += (int64_t)ngrams_in(length_r, n);
        }
    }
    if (length_r == 0 || t->texts < 2) return 0;
    for (size_t k = 1; k < t->texts; k++) {
        t->identical[k] = (size_t)same_units(t->units[k], t->lengths[k], t->units[0], length_r);
        if (t->identical[k]) add_all_matches(out + stride * (k - 1), length_r, orders);
    }
    const uint32_t alphabet = t->alphabet;
    uint32_t classes;
    int start;
    if (count_by_code(work, t, orders, out, stride, &classes, &start) != 0) return 1;
    if (start == 0) return 0;
    for (uint32_t c = 0; c < classes; c++) work->info[0][c].count[1] = 0; /* the passes count each system's own */
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
                    const size_t same = alike_beyond(units_r, length_r, units, t->lengths[k], partner[cls[j]], j, n,
                                                     orders);
                    for (size_t m = 0; m < same; m++) row[3 * (n + m) + 2]++;
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
                if (poll(work, a)) return 1;
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
    Segment t = {units, kept, bases, scratch + 3 * texts, texts, 0, 0, scratch + 4 * texts};
    t.identical[0] = 0;
    if (word_order) { /* first: the character orders then rewrite raw in place */
        tokens_generation(&work->tokens, raw, distinct_tokens_bound(total, texts));
        uint32_t tokens = 0;
        size_t at = 0;
        for (size_t k = 0; k < texts; k++) {
            kept[k] = tokenize(&work->tokens, raw + starts[k], lengths[k], work->units + at, &tokens, work->pause,
                               work->pause_context);
            if (kept[k] == TOKENIZE_INTERRUPTED) return 1;
            units[k] = work->units + at;
            bases[k] = at;
            at += kept[k];
            if (k == 0) t.alphabet = tokens;
            t.foreign |= as_foreign(work->units + bases[k], kept[k], t.alphabet);
        }
        if (stop_after(work, total) || count_shared(work, &t, word_order, stride, out + 3 * char_order) != 0) return 1;
    }
    if (!char_order) return 0;
    size_t at = 0;
    for (size_t k = 0; k < texts; k++) { /* in place: each text's characters, one text after the other */
        bases[k] = at;
        kept[k] = counted_characters(raw + at, raw + starts[k], lengths[k], keep_whitespace);
        at += kept[k];
        units[k] = raw + bases[k];
    }
    new_rank_generation(work);
    uint32_t ranks = 0;
    rank_code_points(work, raw, kept[0], &ranks);
    t.alphabet = ranks;
    t.foreign = 0;
    for (size_t k = 1; k < texts; k++) t.foreign |= rank_known(work, raw + bases[k], kept[k], t.alphabet);
    if (stop_after(work, total)) return 1;
    return count_shared(work, &t, char_order, stride, out);
}
