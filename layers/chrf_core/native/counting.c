/*
 * Counting one segment: per order, hypothesis n-grams, reference n-grams and clipped matches (no Python here).
 *
 * Time is linear in the text, and no input within the contract's limits costs much more than a typical one. Units
 * (code points, or word tokens interned by content: a hash, then an exact comparison) first become dense ranks.
 * While alphabet^n is small, an n-gram is exactly a base-alphabet number and its order is counted with a histogram
 * (small alphabets, whose classes stay large: classes.h's count_by_code, which systems.c's passes start from too).
 * From there every position gets a class id per order, from the pair (its class at the order below, its next unit):
 * a per-class memo of the first continuation, else a direct table while classes * alphabet fit in it, else an
 * open-addressing table of integer pairs compared exactly. Only the shorter side's positions create classes; the
 * other side's only look theirs up (an n-gram the shorter side lacks cannot match), so every per-class array holds
 * at most the shorter side's positions. Matches are the sum over classes of min(count on one side, count on the
 * other). A position whose class occurs on one side only cannot match at any higher order and is dropped; a class
 * with one position on each side is settled by comparing what follows; a class whose members all continue alike to
 * the top order is settled at once. Hashes are seeded per process (hash_seed), so an attacker cannot build inputs
 * that collide in the tables.
 */
#include "classes.h"

#include <stdlib.h>
#include <string.h>

#define SETTLED 0xFFFFFFFEu  /* memo[0] of a class whose members all continue alike to the top order */
#define ALIKE 0xFFFFFFFDu    /* while looking ahead: every member seen so far continues like the first */
#define BRANCHES 0xFFFFFFFCu /* while looking ahead: some member continues differently or runs out */
#define LOOK_AHEAD_FROM 1024 /* positions: fewer than this, looking ahead cannot save much */

/* One segment's sides during the passes. Side 0 is the one with fewer code points: its positions create the
   classes, and its units were ranked first, so they are 0..alphabet-1 (side 1's others are all `alphabet`). */
typedef struct {
    const uint32_t *units[2];
    uint32_t *cls[2], *alive[2];
    size_t lengths[2], alive_counts[2], bases[2];
    uint32_t alphabet;
    int foreign; /* whether side 1 has a unit side 0 lacks */
} Sides;

/*
 * Look ahead from order n: a class whose members (on both sides) all continue with the same units up to the top
 * order keeps exactly its members at every higher order, so it matches min(count, count) at each of them. Such
 * classes are settled at once (their memo[0] becomes SETTLED, the others' NO_CLASS) instead of being carried
 * through one pass per order: a passage that repeats costs one comparison of its positions. Returns how many
 * positions were settled. Unique pairs are left to the pass, which settles them exactly.
 */
static size_t settle_alike(ClassInfo *info, uint32_t classes, const Sides *s, int n, int orders, int64_t *paired) {
    const size_t width = (size_t)(orders - n);
    for (int side = 0; side < 2; side++) {
        for (size_t k = 0; k < s->alive_counts[side]; k++) {
            uint32_t i = s->alive[side][k], c = s->cls[side][i];
            if (!info[c].count[0] || !info[c].count[1] || (info[c].count[0] == 1 && info[c].count[1] == 1)) continue;
            if (i + (size_t)orders > s->lengths[side]) {
                info[c].memo[0] = BRANCHES;
                continue;
            }
            if (side == 0 && info[c].memo[0] == NO_CLASS) { /* the first member on side 0 leads */
                info[c].memo[0] = ALIKE;
                info[c].memo[1] = i;
                continue;
            }
            if (info[c].memo[0] != ALIKE) continue;
            const uint32_t *mine = s->units[side] + i + n, *first = s->units[0] + info[c].memo[1] + n;
            for (size_t d = 0; d < width; d++) {
                if (mine[d] != first[d]) {
                    info[c].memo[0] = BRANCHES;
                    break;
                }
            }
        }
    }
    size_t settled = 0;
    for (uint32_t c = 0; c < classes; c++) {
        if (info[c].memo[0] == ALIKE) {
            uint32_t both = info[c].count[0] < info[c].count[1] ? info[c].count[0] : info[c].count[1];
            paired[n + 1] += both;
            paired[orders + 1] -= both;
            settled += info[c].count[0] + info[c].count[1];
            info[c].memo[0] = SETTLED;
        } else {
            info[c].memo[0] = NO_CLASS;
        }
    }
    return settled;
}

/*
 * Whether to look ahead from order n (settle_alike): only with two orders or more still to count (n + 2 <= orders),
 * enough positions alive for a pass to cost more than the look-ahead (LOOK_AHEAD_FROM), fewer than half of those
 * alive when a look-ahead last settled little (look_ahead_below), and when the last order hardly branched (at most
 * 1/8 more classes than the order before): then the classes are mostly passages that repeat, which continue alike to
 * the top order.
 */
static int worth_looking_ahead(int n, int orders, size_t alive, size_t look_ahead_below, uint32_t classes,
                               uint32_t classes_before) {
    return n >= 2 && n + 2 <= orders && alive >= LOOK_AHEAD_FROM && alive < look_ahead_below &&
           8 * (size_t)classes <= 9 * (size_t)classes_before;
}

/*
 * Add the counts of orders 1..orders of one segment to out[3 * (n - 1) + {0, 1, 2}] (hypothesis n-grams, reference
 * n-grams, clipped matches). s.units[0] and s.units[1] hold the two sides (side 0 the hypothesis unless `swap`) as
 * dense ranks (Sides), so that units are digits of a code and (class, unit) indexes the direct table.
 *
 * One pass per order over the positions that can still match: a position whose class occurs on one side only is
 * dropped (it cannot match at any higher order), the others get their class at the next order, counted as they go.
 * A class with exactly one position on each side is a unique pair: no other position can ever share its longer
 * n-grams, so the pair matches at each higher order for as long as the two sequences continue alike. Such pairs are
 * settled by comparing units directly and leave the pass, which keeps long, near-identical texts cheap. Returns 0,
 * or 1 when interrupted (the pause convention's return, kernel.h).
 */
static int count_orders(Work *work, Sides s, int swap, int orders, int64_t *out) {
    int64_t paired[MAX_ORDERS + 2] = {0}; /* difference array: matches of unique pairs per order */
    const size_t length_h = s.lengths[swap], length_r = s.lengths[!swap];
    for (int n = 1; n <= orders; n++) {
        out[3 * (n - 1)] += (int64_t)ngrams_in(length_h, n);
        out[3 * (n - 1) + 1] += (int64_t)ngrams_in(length_r, n);
    }
    if (length_h == 0 || length_r == 0) return 0;
    if (same_units(s.units[0], s.lengths[0], s.units[1], s.lengths[1])) {
        add_all_matches(out, length_h, orders);
        return 0;
    }
    s.bases[0] = 0;
    s.bases[1] = s.lengths[0];
    for (int side = 0; side < 2; side++) {
        s.cls[side] = work->cls + s.bases[side];
        s.alive[side] = work->alive + s.bases[side];
    }
    const Segment texts = {s.units, s.lengths, s.bases, s.alive_counts, 2, s.alphabet, s.foreign, NULL};
    uint32_t classes;
    int start;
    if (count_by_code(work, &texts, orders, out, 0, &classes, &start) != 0) return 1;
    if (start == 0) return 0;
    int now = 0;
    size_t look_ahead_below = SIZE_MAX; /* after a look-ahead that settled little, wait until half the positions go */
    uint32_t classes_before = 0;
    const uint32_t width = s.alphabet + 1; /* the direct table's rows: every unit of side 0, and side 1's foreign one */
    const uint32_t *const units_a = s.units[0], *const units_b = s.units[1];
    uint32_t *const cls_a = s.cls[0], *const cls_b = s.cls[1], *const alive_a = s.alive[0], *const alive_b = s.alive[1];
    const size_t length_a = s.lengths[0], length_b = s.lengths[1];
    for (int n = start;; n++) {
        ClassInfo *info = work->info[now], *next = work->info[!now];
        const uint32_t *partner = work->partner[now];
        uint32_t *next_partner = work->partner[!now];
        int64_t matches = 0;
        for (uint32_t c = 0; c < classes; c++)
            matches += info[c].count[0] < info[c].count[1] ? info[c].count[0] : info[c].count[1];
        out[3 * (n - 1) + 2] += matches;
        if (matches == 0 || n == orders) break;
        const size_t alive_count = s.alive_counts[0] + s.alive_counts[1];
        if (worth_looking_ahead(n, orders, alive_count, look_ahead_below, classes, classes_before) &&
            2 * settle_alike(info, classes, &s, n, orders, paired) < alive_count)
            look_ahead_below = alive_count / 2;
        classes_before = classes;
        const int direct = (uint64_t)classes * width <= DIRECT_SLOTS; /* (class, unit) indexes it: no hashing */
        if (direct)
            new_direct_generation(work);
        else
            pair_table_generation(&work->pairs, s.alive_counts[0]);
        uint32_t next_classes = 0;
        size_t kept_a = 0, kept_b = 0;
        for (size_t k = 0; k < s.alive_counts[0]; k++) {
            if (poll(work, k)) return 1;
            uint32_t i = alive_a[k], c = cls_a[i];
            if (!info[c].count[1] || i + (size_t)n >= length_a || (info[c].count[0] == 1 && info[c].count[1] == 1) ||
                info[c].memo[0] == SETTLED)
                continue;
            uint32_t child = continuation(work, direct, width, info, next, c, units_a[i + n], &next_classes, 0);
            cls_a[i] = child;
            next[child].count[0]++;
            next_partner[child] = i;
            alive_a[kept_a++] = i;
        }
        for (size_t k = 0; k < s.alive_counts[1]; k++) {
            if (poll(work, k)) return 1;
            uint32_t j = alive_b[k], c = cls_b[j];
            if (!info[c].count[0] || j + (size_t)n >= length_b || info[c].memo[0] == SETTLED) continue;
            if (info[c].count[0] == 1 && info[c].count[1] == 1) { /* a unique pair: settled here, off the passes */
                paired[n + 1] += 1;
                paired[n + 1 + alike_beyond(units_a, length_a, units_b, length_b, partner[c], j, n, orders)] -= 1;
                continue;
            }
            uint32_t child = continuation(work, direct, width, info, next, c, units_b[j + n], &next_classes, 1);
            if (child == NO_CLASS) continue;
            cls_b[j] = child;
            next[child].count[1]++;
            alive_b[kept_b++] = j;
        }
        s.alive_counts[0] = kept_a;
        s.alive_counts[1] = kept_b;
        classes = next_classes;
        now = !now;
        if (kept_a == 0 || kept_b == 0) break;
    }
    int64_t running = 0;
    for (int m = 2; m <= orders; m++) {
        running += paired[m];
        out[3 * (m - 1) + 2] += running;
    }
    return 0;
}

int count_segment(Work *work, size_t length_h, size_t length_r, int char_order, int word_order, int keep_whitespace,
                  int64_t *out) {
    uint32_t *raw = work->raw;
    /* Side 0, whose units are numbered first and whose positions create the classes, has fewer code points. */
    const int swap = length_r < length_h;
    const size_t lengths[2] = {swap ? length_r : length_h, swap ? length_h : length_r};
    const uint32_t *texts[2] = {swap ? raw + length_h : raw, swap ? raw : raw + length_h};
    if (word_order) { /* first: the character orders then rewrite raw in place */
        tokens_generation(&work->tokens, raw, distinct_tokens_bound(length_h + length_r, 2));
        uint32_t tokens = 0;
        Sides s;
        memset(&s, 0, sizeof s);
        s.lengths[0] = tokenize(&work->tokens, texts[0], lengths[0], work->units, &tokens, work->pause,
                                work->pause_context);
        if (s.lengths[0] == TOKENIZE_INTERRUPTED) return 1;
        s.alphabet = tokens;
        s.lengths[1] = tokenize(&work->tokens, texts[1], lengths[1], work->units + s.lengths[0], &tokens, work->pause,
                                work->pause_context);
        if (s.lengths[1] == TOKENIZE_INTERRUPTED || stop_after(work, length_h + length_r)) return 1;
        s.foreign = as_foreign(work->units + s.lengths[0], s.lengths[1], s.alphabet);
        s.units[0] = work->units;
        s.units[1] = work->units + s.lengths[0];
        if (count_orders(work, s, swap, word_order, out + 3 * char_order) != 0) return 1;
    }
    if (!char_order) return 0;
    size_t kept[2] = {length_h, length_r};
    if (!keep_whitespace) { /* in place: both sides' characters, one after the other */
        kept[0] = counted_characters(raw, raw, length_h, 0);
        kept[1] = counted_characters(raw + kept[0], raw + length_h, length_r, 0);
    }
    Sides s;
    memset(&s, 0, sizeof s);
    s.units[swap] = raw;
    s.units[!swap] = raw + kept[0];
    s.lengths[swap] = kept[0];
    s.lengths[!swap] = kept[1];
    uint32_t ranks = 0;
    new_rank_generation(work);
    rank_code_points(work, (uint32_t *)s.units[0], s.lengths[0], &ranks);
    s.alphabet = ranks;
    s.foreign = rank_known(work, (uint32_t *)s.units[1], s.lengths[1], s.alphabet);
    if (stop_after(work, length_h + length_r)) return 1;
    return count_orders(work, s, swap, char_order, out);
}
