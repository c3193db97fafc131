/*
 * chrf_core._kernel: the per-order n-gram counts of chrF / chrF++ in C.
 *
 * C99 and the CPython Limited API (3.11), so one _kernel.abi3.so serves every Python from 3.11 on; nothing
 * beyond libc. It counts exactly what chrf_core's pure-Python kernel counts: code points, the contract's
 * whitespace removal, chrF++.py word tokens, clipped matches, sums over segments.
 *
 * Time is linear in the text, and no input within the contract's limits costs much more than a typical one. Units
 * (code points, or word tokens interned by content: a 64-bit hash, then an exact comparison) first become dense
 * ranks. While alphabet^n is small, an n-gram is exactly a base-alphabet number and its order is counted with a
 * histogram (small alphabets, whose classes stay large). From there every position gets a class id per order,
 * from the pair (its class at the order below, its next unit): a per-class memo of the first continuation, else a
 * direct table while classes * alphabet fit in it, else an open-addressing table of integer pairs compared exactly.
 * Matches are the sum over classes of min(hypothesis count, reference count). A position whose class occurs on one
 * side only cannot match at any higher order and is dropped; a class with one position on each side is settled by
 * comparing what follows; a class whose members all continue alike to the top order is settled at once. Hashes
 * are seeded per process (set_seed), so an attacker cannot build inputs that collide in the tables.
 */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ORDERS 14
#define NO_CLASS 0xFFFFFFFFu /* no unit or class id reaches these values */
#define SETTLED 0xFFFFFFFEu  /* memo_unit of a class whose members all continue alike to the top order */
#define ALIKE 0xFFFFFFFDu    /* while looking ahead: every member seen so far continues like the first */
#define BRANCHES 0xFFFFFFFCu /* while looking ahead: some member continues differently or runs out */
#define LOOK_AHEAD_FROM 1024 /* positions: fewer than this, looking ahead cannot save much */
/* Direct-table slots (4 MB, touched only as far as used): while classes * alphabet fits, a continuation that is not
   its class's first is one access near the class's other continuations instead of a probe into a hash table twice
   the positions' size (long near copies with a small alphabet keep tens of thousands of classes for several
   orders). */
#define DIRECT_SLOTS (1u << 19)
#define MAX_LENGTH 0x0FFFFFFFu /* code points per side of one segment: keeps every index and table size in 32 bits */

typedef struct {
    uint64_t key;
    uint32_t value;
    uint32_t stamp;
} Slot;

typedef struct {
    uint32_t stamp;
    uint32_t value;
} DirectSlot;

/* What one order keeps per class, side by side so that a position touches one cache line for its class. */
typedef struct {
    uint32_t count_h;    /* occurrences in the hypothesis */
    uint32_t count_r;    /* occurrences in the reference */
    uint32_t memo_unit;  /* the unit its first continuing member continues with, or NO_CLASS */
    uint32_t memo_class; /* the class of that continuation at the next order */
} ClassInfo;

typedef struct {
    uint64_t hash;
    const uint32_t *text;
    uint32_t length;
    uint32_t value;
    uint32_t stamp;
} TokenSlot;

/* Buffers reused across the segments of one call, grown to the largest segment. */
typedef struct {
    uint32_t *raw[2];   /* code points of the hypothesis [0] and reference [1] */
    uint32_t *units[2]; /* characters after whitespace removal, or token ids */
    uint32_t *cls[2];      /* class id of the n-gram starting at each position */
    uint32_t *alive[2];    /* positions that can still match */
    ClassInfo *info[2];    /* [this order's, the next order's]: per class */
    uint32_t *partner[2];  /* [this order's, the next order's]: the last reference position seen in each class */
    size_t side_capacity;
    Slot *table;
    TokenSlot *tokens;
    DirectSlot *direct; /* DIRECT_SLOTS slots indexed by class * alphabet + unit, for orders with few classes */
    uint32_t *histogram[2]; /* per side: DIRECT_SLOTS occurrence counts indexed by n-gram code, kept cleared */
    size_t table_capacity;
    uint32_t mask;
    uint32_t stamp;
    uint32_t token_stamp;
    uint32_t direct_stamp;
} Work;

static uint64_t hash_seed = 0x243F6A8885A308D3ull;

/* Kept between calls (the GIL serialises them), so repeated requests reuse warm memory instead of allocating and
   clearing tables each time; given back when a call needed more than KEEP_UNITS per side. */
#define KEEP_UNITS (1u << 18)
static Work shared_work;
static int shared_work_busy = 0;

static inline uint64_t mix64(uint64_t x) {
    x ^= hash_seed;
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 33;
    return x;
}

static inline int is_space(uint32_t c) {
    /* The contract's whitespace: U+0009-U+000D, U+001C-U+001F, U+0020, U+0085, U+00A0, U+1680,
       U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 (exactly what Python's str.split() splits on). */
    if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    if (c < 0x85) return 0;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static inline int is_ascii_punctuation(uint32_t c) {
    /* string.punctuation: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ */
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
}

static int grow(void **buffer, size_t count, size_t size) {
    void *bigger = PyMem_Realloc(*buffer, count * size);
    if (bigger == NULL) return -1;
    *buffer = bigger;
    return 0;
}

/* Room for two sides of up to `longer` units each, and tables for the `keys` units of both sides. */
static int reserve(Work *work, size_t longer, size_t keys) {
    if (longer > work->side_capacity) {
        size_t capacity = longer < 64 ? 64 : longer;
        for (int side = 0; side < 2; side++) {
            if (grow((void **)&work->raw[side], capacity, sizeof(uint32_t)) ||
                grow((void **)&work->units[side], capacity, sizeof(uint32_t)) ||
                grow((void **)&work->cls[side], capacity, sizeof(uint32_t)) ||
                grow((void **)&work->alive[side], capacity, sizeof(uint32_t)) ||
                grow((void **)&work->info[side], 2 * capacity, sizeof(ClassInfo)) ||
                grow((void **)&work->partner[side], 2 * capacity, sizeof(uint32_t)))
                return -1;
        }
        work->side_capacity = capacity;
    }
    if (work->direct == NULL) {
        work->direct = PyMem_Calloc(DIRECT_SLOTS, sizeof(DirectSlot));
        if (work->direct == NULL) return -1;
        work->direct_stamp = 0;
    }
    for (int side = 0; side < 2; side++) {
        if (work->histogram[side] == NULL) {
            work->histogram[side] = PyMem_Calloc(DIRECT_SLOTS, sizeof(uint32_t));
            if (work->histogram[side] == NULL) return -1;
        }
    }
    size_t slots = 16;
    while (slots < 2 * keys) slots <<= 1;
    if (slots > work->table_capacity) {
        if (grow((void **)&work->table, slots, sizeof(Slot)) || grow((void **)&work->tokens, slots, sizeof(TokenSlot)))
            return -1;
        memset(work->table + work->table_capacity, 0, (slots - work->table_capacity) * sizeof(Slot));
        memset(work->tokens + work->table_capacity, 0, (slots - work->table_capacity) * sizeof(TokenSlot));
        work->table_capacity = slots;
    }
    return 0;
}

static void release(Work *work) {
    for (int side = 0; side < 2; side++) {
        PyMem_Free(work->raw[side]);
        PyMem_Free(work->units[side]);
        PyMem_Free(work->cls[side]);
        PyMem_Free(work->alive[side]);
        PyMem_Free(work->info[side]);
        PyMem_Free(work->partner[side]);
    }
    PyMem_Free(work->direct);
    PyMem_Free(work->histogram[0]);
    PyMem_Free(work->histogram[1]);
    PyMem_Free(work->table);
    PyMem_Free(work->tokens);
    memset(work, 0, sizeof *work);
}

/* A fresh, empty table for keys of a segment whose sides hold `keys` units together. */
static void new_generation(Work *work, size_t keys) {
    uint32_t slots = 16;
    while (slots < 2 * keys) slots <<= 1;
    work->mask = slots - 1;
    if (++work->stamp == 0) { /* wrapped after 2^32 generations: clear every stamp once */
        for (size_t i = 0; i < work->table_capacity; i++) work->table[i].stamp = 0;
        work->stamp = 1;
    }
}

static inline uint32_t intern_pair(Work *work, uint32_t first, uint32_t second, uint32_t *classes) {
    uint64_t key = ((uint64_t)first << 32) | second;
    uint32_t index = (uint32_t)mix64(key) & work->mask;
    for (;;) {
        Slot *slot = &work->table[index];
        if (slot->stamp != work->stamp) {
            slot->stamp = work->stamp;
            slot->key = key;
            slot->value = (*classes)++;
            return slot->value;
        }
        if (slot->key == key) return slot->value;
        index = (index + 1) & work->mask;
    }
}

static inline uint32_t intern_token(Work *work, const uint32_t *text, uint32_t length, uint32_t *tokens) {
    uint64_t hash = (uint64_t)length * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < length; i++) hash = (hash ^ text[i]) * 0x100000001B3ull + (hash >> 29);
    hash = mix64(hash);
    uint32_t index = (uint32_t)hash & work->mask;
    for (;;) {
        TokenSlot *slot = &work->tokens[index];
        if (slot->stamp != work->token_stamp) {
            slot->stamp = work->token_stamp;
            slot->hash = hash;
            slot->text = text;
            slot->length = length;
            slot->value = (*tokens)++;
            return slot->value;
        }
        if (slot->hash == hash && slot->length == length && memcmp(slot->text, text, length * sizeof(uint32_t)) == 0)
            return slot->value;
        index = (index + 1) & work->mask;
    }
}

/* chrF++.py's separate_punctuation over one side's code points: token ids into units, their number returned. */
static size_t tokenize(Work *work, int side, size_t length, uint32_t *tokens) {
    const uint32_t *text = work->raw[side];
    uint32_t *ids = work->units[side];
    size_t count = 0, i = 0;
    while (i < length) {
        while (i < length && is_space(text[i])) i++;
        if (i == length) break;
        size_t start = i;
        while (i < length && !is_space(text[i])) i++;
        uint32_t size = (uint32_t)(i - start);
        const uint32_t *word = text + start;
        if (size > 1 && is_ascii_punctuation(word[size - 1])) {
            ids[count++] = intern_token(work, word, size - 1, tokens);
            ids[count++] = intern_token(work, word + size - 1, 1, tokens);
        } else if (size > 1 && is_ascii_punctuation(word[0])) {
            ids[count++] = intern_token(work, word, 1, tokens);
            ids[count++] = intern_token(work, word + 1, size - 1, tokens);
        } else {
            ids[count++] = intern_token(work, word, size, tokens);
        }
    }
    return count;
}

/* A fresh, empty direct table (its slots are valid only when stamped with the current stamp). */
static void new_direct_generation(Work *work) {
    if (++work->direct_stamp == 0) {
        for (size_t i = 0; i < DIRECT_SLOTS; i++) work->direct[i].stamp = 0;
        work->direct_stamp = 1;
    }
}

/* A class of the next order with no occurrences yet. */
static inline void clear_class(ClassInfo *next, uint32_t id) {
    next[id].count_h = next[id].count_r = 0;
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
 * hash table.
 */
static inline uint32_t continuation(Work *work, int direct, uint32_t alphabet, ClassInfo *now, ClassInfo *next,
                                    uint32_t c, uint32_t unit, uint32_t *classes) {
    if (now[c].memo_unit == unit) return now[c].memo_class;
    if (now[c].memo_unit == NO_CLASS) {
        now[c].memo_unit = unit;
        return now[c].memo_class = new_class(next, classes);
    }
    if (direct) {
        DirectSlot *slot = &work->direct[c * alphabet + unit];
        if (slot->stamp != work->direct_stamp) {
            slot->stamp = work->direct_stamp;
            slot->value = new_class(next, classes);
        }
        return slot->value;
    }
    const uint32_t fresh = *classes, child = intern_pair(work, c, unit, classes);
    if (child == fresh) clear_class(next, child);
    return child;
}

/*
 * Look ahead from order n: a class whose members (on both sides) all continue with the same units up to the top
 * order keeps exactly its members at every higher order, so it matches min(hypothesis, reference count) at each of
 * them. Such classes are settled at once (their memo_unit becomes SETTLED, the others' NO_CLASS) instead of being
 * carried through one pass per order: a passage that repeats costs one comparison of its positions. Returns how
 * many positions were settled. Unique pairs are left to the pass, which settles them exactly.
 */
static size_t settle_alike(ClassInfo *info, uint32_t classes, const uint32_t *const units[2],
                           const size_t lengths[2], const uint32_t *const alive[2], const size_t alive_counts[2],
                           const uint32_t *const cls[2], int n, int orders, int64_t *paired) {
    const size_t width = (size_t)(orders - n);
    for (int side = 0; side < 2; side++) {
        for (size_t k = 0; k < alive_counts[side]; k++) {
            uint32_t i = alive[side][k], c = cls[side][i];
            if (!info[c].count_h || !info[c].count_r || (info[c].count_h == 1 && info[c].count_r == 1)) continue;
            if (i + (size_t)orders > lengths[side]) {
                info[c].memo_unit = BRANCHES;
                continue;
            }
            if (side == 0 && info[c].memo_unit == NO_CLASS) { /* the first member in the hypothesis leads */
                info[c].memo_unit = ALIKE;
                info[c].memo_class = i;
                continue;
            }
            if (info[c].memo_unit != ALIKE) continue;
            const uint32_t *mine = units[side] + i + n, *first = units[0] + info[c].memo_class + n;
            for (size_t d = 0; d < width; d++) {
                if (mine[d] != first[d]) {
                    info[c].memo_unit = BRANCHES;
                    break;
                }
            }
        }
    }
    size_t settled = 0;
    for (uint32_t c = 0; c < classes; c++) {
        if (info[c].memo_unit == ALIKE) {
            uint32_t both = info[c].count_h < info[c].count_r ? info[c].count_h : info[c].count_r;
            paired[n + 1] += both;
            paired[orders + 1] -= both;
            settled += info[c].count_h + info[c].count_r;
            info[c].memo_unit = SETTLED;
        } else {
            info[c].memo_unit = NO_CLASS;
        }
    }
    return settled;
}

/*
 * Orders 1..start-1 of one segment, counted without classes: while alphabet^n is small, an n-gram is exactly the
 * number whose base-`alphabet` digits are its units, so its occurrences are a histogram entry (left cleared).
 * Small alphabets, whose classes stay large for many orders, then cost one sequential pass per low order. At the start order, the n-grams found on
 * both sides become the classes the passes continue from (info and partner of buffer 0, the alive positions,
 * *classes). Returns the start order, or 0 when nothing matches from some order on.
 */
static int count_by_code(Work *work, size_t length_h, size_t length_r, uint32_t alphabet, int orders, int64_t *out,
                         uint32_t *classes, size_t alive_counts[2]) {
    const size_t limit = length_h + length_r < DIRECT_SLOTS ? length_h + length_r : DIRECT_SLOTS;
    int start = 1;
    for (uint64_t span = alphabet; start < orders && span * alphabet <= limit; span *= alphabet) start++;
    uint32_t *const histogram_h = work->histogram[0], *const histogram_r = work->histogram[1];
    const uint32_t *const units[2] = {work->units[0], work->units[1]};
    uint32_t *const code[2] = {work->cls[0], work->cls[1]}, *const alive[2] = {work->alive[0], work->alive[1]};
    const size_t lengths[2] = {length_h, length_r};
    size_t span = 1;
    for (int n = 1; n <= start; n++) {
        span *= alphabet;
        if (lengths[0] < (size_t)n || lengths[1] < (size_t)n) return 0;
        for (int side = 0; side < 2; side++) {
            const uint32_t *unit = units[side] + n - 1;
            uint32_t *codes = code[side], *histogram = work->histogram[side];
            const size_t positions = lengths[side] - (size_t)n + 1;
            if (n == 1) {
                for (size_t i = 0; i < positions; i++) histogram[codes[i] = unit[i]]++;
            } else {
                for (size_t i = 0; i < positions; i++) histogram[codes[i] = codes[i] * alphabet + unit[i]]++;
            }
        }
        if (n == start) break;
        int64_t matches = 0;
        for (size_t c = 0; c < span; c++) matches += histogram_h[c] < histogram_r[c] ? histogram_h[c] : histogram_r[c];
        memset(histogram_h, 0, span * sizeof(uint32_t));
        memset(histogram_r, 0, span * sizeof(uint32_t));
        out[3 * (n - 1) + 2] += matches;
        if (matches == 0) return 0;
    }
    ClassInfo *info = work->info[0];
    uint32_t shared = 0;
    for (size_t c = 0; c < span; c++) {
        if (histogram_h[c] && histogram_r[c]) {
            info[shared].count_h = histogram_h[c];
            info[shared].count_r = histogram_r[c];
            info[shared].memo_unit = NO_CLASS;
            histogram_h[c] = shared++; /* from here on: the code's class, or NO_CLASS */
        } else {
            histogram_h[c] = NO_CLASS;
        }
    }
    for (int side = 0; side < 2; side++) {
        const size_t positions = lengths[side] - (size_t)start + 1;
        size_t kept = 0;
        for (size_t i = 0; i < positions; i++) {
            uint32_t id = histogram_h[code[side][i]];
            if (id == NO_CLASS) continue;
            code[side][i] = id;
            alive[side][kept++] = (uint32_t)i;
            if (side) work->partner[0][id] = (uint32_t)i;
        }
        alive_counts[side] = kept;
    }
    memset(histogram_h, 0, span * sizeof(uint32_t));
    memset(histogram_r, 0, span * sizeof(uint32_t));
    *classes = shared;
    return shared ? start : 0;
}

/*
 * Add the counts of orders 1..orders for one segment to out[3 * (n - 1) + {0, 1, 2}] (hypothesis n-grams,
 * reference n-grams, clipped matches). units[side] hold the sequences as dense ranks below `alphabet` (equal
 * units, equal ranks on both sides), so that units are digits of a code and (class, unit) indexes the direct table.
 *
 * One pass per order over the positions that can still match: a position whose class occurs on one side only is
 * dropped (it cannot match at any higher order), the others get their class at the next order, counted as they
 * go. A class with exactly one position on each side is a unique pair: no other position can ever share its
 * longer n-grams, so the pair matches at each higher order for as long as the two sequences continue alike. Such
 * pairs are settled by comparing units directly and leave the pass, which keeps long, near-identical texts cheap.
 */
static void count_orders(Work *work, size_t length_h, size_t length_r, uint32_t alphabet, int orders, int64_t *out) {
    uint32_t *units_h = work->units[0], *units_r = work->units[1];
    uint32_t *cls_h = work->cls[0], *cls_r = work->cls[1];
    uint32_t *alive_h = work->alive[0], *alive_r = work->alive[1];
    int64_t paired[MAX_ORDERS + 2] = {0}; /* difference array: matches of unique pairs per order */
    for (int n = 1; n <= orders; n++) {
        out[3 * (n - 1)] += length_h >= (size_t)n ? (int64_t)(length_h - n + 1) : 0;
        out[3 * (n - 1) + 1] += length_r >= (size_t)n ? (int64_t)(length_r - n + 1) : 0;
    }
    if (length_h == 0 || length_r == 0) return;
    if (length_h == length_r && memcmp(units_h, units_r, length_h * sizeof(uint32_t)) == 0) {
        for (int n = 1; n <= orders && (size_t)n <= length_h; n++) out[3 * (n - 1) + 2] += (int64_t)(length_h - n + 1);
        return;
    }
    uint32_t classes;
    size_t alive_counts[2];
    const int start = count_by_code(work, length_h, length_r, alphabet, orders, out, &classes, alive_counts);
    if (start == 0) return;
    int now = 0;
    size_t alive_count_h = alive_counts[0], alive_count_r = alive_counts[1];
    size_t look_ahead_below = SIZE_MAX; /* after a look-ahead that settled little, wait until half the positions go */
    uint32_t classes_before = 0;
    for (int n = start;; n++) {
        ClassInfo *info = work->info[now], *next = work->info[!now];
        const uint32_t *partner = work->partner[now];
        uint32_t *next_partner = work->partner[!now];
        int64_t matches = 0;
        for (uint32_t c = 0; c < classes; c++)
            matches += info[c].count_h < info[c].count_r ? info[c].count_h : info[c].count_r;
        out[3 * (n - 1) + 2] += matches;
        if (matches == 0 || n == orders) break;
        const size_t alive_count = alive_count_h + alive_count_r;
        if (n >= 2 && n + 2 <= orders && alive_count >= LOOK_AHEAD_FROM && alive_count < look_ahead_below &&
            8 * (size_t)classes <= 9 * (size_t)classes_before) { /* the last order hardly branched */
            const uint32_t *const units[2] = {units_h, units_r}, *const alive[2] = {alive_h, alive_r};
            const uint32_t *const cls[2] = {cls_h, cls_r};
            const size_t lengths[2] = {length_h, length_r}, alive_counts[2] = {alive_count_h, alive_count_r};
            if (2 * settle_alike(info, classes, units, lengths, alive, alive_counts, cls, n, orders, paired) < alive_count)
                look_ahead_below = alive_count / 2;
        }
        classes_before = classes;
        const int direct = (uint64_t)classes * alphabet <= DIRECT_SLOTS;
        if (direct)
            new_direct_generation(work);
        else
            new_generation(work, alive_count_h + alive_count_r);
        uint32_t next_classes = 0;
        size_t kept_h = 0, kept_r = 0;
        for (size_t k = 0; k < alive_count_h; k++) {
            uint32_t i = alive_h[k], c = cls_h[i];
            if (!info[c].count_r || i + (size_t)n >= length_h || info[c].memo_unit == SETTLED) continue;
            if (info[c].count_h == 1 && info[c].count_r == 1) {
                size_t j = partner[c], same = 0;
                while (n + (int)same < orders && i + n + same < length_h && j + n + same < length_r &&
                       units_h[i + n + same] == units_r[j + n + same])
                    same++;
                paired[n + 1] += 1;
                paired[n + 1 + same] -= 1;
                continue;
            }
            uint32_t child = continuation(work, direct, alphabet, info, next, c, units_h[i + n], &next_classes);
            cls_h[i] = child;
            next[child].count_h++;
            alive_h[kept_h++] = i;
        }
        for (size_t k = 0; k < alive_count_r; k++) {
            uint32_t j = alive_r[k], c = cls_r[j];
            if (!info[c].count_h || j + (size_t)n >= length_r || (info[c].count_h == 1 && info[c].count_r == 1) ||
                info[c].memo_unit == SETTLED)
                continue;
            uint32_t child = continuation(work, direct, alphabet, info, next, c, units_r[j + n], &next_classes);
            cls_r[j] = child;
            next[child].count_r++;
            next_partner[child] = j;
            alive_r[kept_r++] = j;
        }
        alive_count_h = kept_h;
        alive_count_r = kept_r;
        classes = next_classes;
        now = !now;
        if (kept_h == 0 || kept_r == 0) break;
    }
    int64_t running = 0;
    for (int m = 2; m <= orders; m++) {
        running += paired[m];
        out[3 * (m - 1) + 2] += running;
    }
}

/* Character orders of one segment: whitespace removed unless kept, code points interned into dense ranks. */
static void count_characters(Work *work, size_t raw_h, size_t raw_r, int keep_whitespace, int orders, int64_t *out) {
    size_t lengths[2] = {raw_h, raw_r};
    for (int side = 0; side < 2; side++) {
        const uint32_t *raw = work->raw[side];
        uint32_t *units = work->units[side];
        size_t kept = 0;
        if (keep_whitespace) {
            memcpy(units, raw, lengths[side] * sizeof(uint32_t));
            kept = lengths[side];
        } else {
            for (size_t i = 0; i < lengths[side]; i++)
                if (!is_space(raw[i])) units[kept++] = raw[i];
        }
        lengths[side] = kept;
    }
    new_generation(work, lengths[0] + lengths[1]);
    uint32_t classes = 0;
    for (int side = 0; side < 2; side++)
        for (size_t i = 0; i < lengths[side]; i++)
            work->units[side][i] = intern_pair(work, NO_CLASS, work->units[side][i], &classes);
    count_orders(work, lengths[0], lengths[1], classes, orders, out);
}

/* Word orders of one segment: tokens of both sides interned into shared dense ids. */
static void count_words(Work *work, size_t raw_h, size_t raw_r, int orders, int64_t *out) {
    new_generation(work, raw_h + raw_r);
    if (++work->token_stamp == 0) {
        for (size_t i = 0; i < work->table_capacity; i++) work->tokens[i].stamp = 0;
        work->token_stamp = 1;
    }
    uint32_t tokens = 0;
    size_t length_h = tokenize(work, 0, raw_h, &tokens);
    size_t length_r = tokenize(work, 1, raw_r, &tokens);
    count_orders(work, length_h, length_r, tokens, orders, out);
}

/* The code points of segment `index` of both sides into work->raw; their lengths. -1 with an exception set. */
static int load_pair(Work *work, PyObject *hypotheses, PyObject *references, Py_ssize_t index, size_t lengths[2]) {
    PyObject *sides[2] = {hypotheses, references};
    const char *names[2] = {"hypotheses", "references"};
    PyObject *texts[2] = {NULL, NULL};
    Py_ssize_t sizes[2] = {0, 0};
    int status = -1;
    for (int side = 0; side < 2; side++) {
        texts[side] = PySequence_GetItem(sides[side], index);
        if (texts[side] == NULL) goto done;
        if (!PyUnicode_Check(texts[side])) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] must be a str", names[side], index);
            goto done;
        }
        sizes[side] = PyUnicode_GetLength(texts[side]);
        if (sizes[side] < 0) goto done;
        if ((size_t)sizes[side] > MAX_LENGTH) {
            PyErr_Format(PyExc_ValueError, "%s[%zd] is too long for the native kernel", names[side], index);
            goto done;
        }
    }
    if (reserve(work, (size_t)(sizes[0] > sizes[1] ? sizes[0] : sizes[1]), (size_t)(sizes[0] + sizes[1])) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    for (int side = 0; side < 2; side++) {
        if (sizes[side] > 0 && PyUnicode_AsUCS4(texts[side], (Py_UCS4 *)work->raw[side], sizes[side], 0) == NULL)
            goto done;
        lengths[side] = (size_t)sizes[side];
    }
    status = 0;
done:
    Py_XDECREF(texts[0]);
    Py_XDECREF(texts[1]);
    return status;
}

PyDoc_STRVAR(count_doc,
             "count(hypotheses, references, char_order, word_order, include_whitespace, per_segment)\n--\n\n"
             "Per-order (hypothesis n-grams, reference n-grams, clipped matches), character orders first.\n"
             "Texts must already be lowercased if the settings ask for it. Returns a tuple of (h, r, m) tuples\n"
             "summed over segments, or with per_segment true, bytes of native int64 values: one row of\n"
             "3 * (char_order + word_order) values per segment.");

static PyObject *count(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *hypotheses, *references;
    int char_order, word_order, keep_whitespace, per_segment;
    if (!PyArg_ParseTuple(args, "OOiipp:count", &hypotheses, &references, &char_order, &word_order, &keep_whitespace,
                          &per_segment))
        return NULL;
    if (char_order < 0 || word_order < 0 || char_order + word_order > MAX_ORDERS) {
        PyErr_SetString(PyExc_ValueError, "orders out of range");
        return NULL;
    }
    Py_ssize_t segments = PySequence_Size(hypotheses);
    if (segments < 0) return NULL;
    Py_ssize_t reference_count = PySequence_Size(references);
    if (reference_count < 0) return NULL;
    if (reference_count != segments) {
        PyErr_SetString(PyExc_ValueError, "hypotheses and references differ in length");
        return NULL;
    }
    const int orders = char_order + word_order;
    const size_t row = 3 * (size_t)orders;
    PyObject *rows = NULL;
    int64_t *rows_data = NULL;
    if (per_segment) {
        rows = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(row * (size_t)segments * sizeof(int64_t)));
        if (rows == NULL) return NULL;
        rows_data = (int64_t *)PyBytes_AsString(rows);
        if (rows_data == NULL) {
            Py_DECREF(rows);
            return NULL;
        }
    }
    int64_t totals[3 * MAX_ORDERS] = {0};
    int64_t segment[3 * MAX_ORDERS];
    /* A sequence whose __getitem__ runs Python code could call back in: then this call gets its own buffers. */
    Work own_work;
    memset(&own_work, 0, sizeof own_work);
    int shared = !shared_work_busy;
    Work *work = shared ? &shared_work : &own_work;
    shared_work_busy |= shared;
    int failed = 0;
    for (Py_ssize_t index = 0; index < segments && !failed; index++) {
        size_t lengths[2];
        if (load_pair(work, hypotheses, references, index, lengths) < 0) {
            failed = 1;
            break;
        }
        memset(segment, 0, row * sizeof(int64_t));
        if (char_order) count_characters(work, lengths[0], lengths[1], keep_whitespace, char_order, segment);
        if (word_order) count_words(work, lengths[0], lengths[1], word_order, segment + 3 * char_order);
        if (per_segment) {
            memcpy(rows_data + row * (size_t)index, segment, row * sizeof(int64_t));
        } else {
            for (size_t k = 0; k < row; k++) totals[k] += segment[k];
        }
    }
    if (shared) {
        shared_work_busy = 0;
        if (work->side_capacity > KEEP_UNITS) release(work);
    } else {
        release(work);
    }
    if (failed) {
        Py_XDECREF(rows);
        return NULL;
    }
    if (per_segment) return rows;
    PyObject *result = PyTuple_New(orders);
    if (result == NULL) return NULL;
    for (int n = 0; n < orders; n++) {
        PyObject *triple = Py_BuildValue("(LLL)", (long long)totals[3 * n], (long long)totals[3 * n + 1],
                                         (long long)totals[3 * n + 2]);
        if (triple == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyTuple_SetItem(result, n, triple);
    }
    return result;
}

/* ---------------------------------------------------------------------------------------------------------------
 * pairwise: every hypothesis against every reference, each text's n-grams counted once.
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
 * are returned to the caller, which computes them exactly.
 * ------------------------------------------------------------------------------------------------------------- */

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

typedef struct {
    int orders;
    double beta_squared;
    int per_order_f;
} Scoring;

/* One pair's score (0..100) from its per-order n-gram totals and matches, as the contract defines it. */
static Double2 pair_score(const Scoring *scoring, const uint32_t *hyp, const uint32_t *ref, const uint32_t *matches) {
    const double b2 = scoring->beta_squared;
    Double2 zero = d2_of(0.0);
    if (scoring->per_order_f) { /* 100 / orders * sum of (1 + b^2) m / (b^2 r + h) */
        Double2 sum = zero;
        for (int o = 0; o < scoring->orders; o++)
            if (hyp[o] && ref[o] && matches[o])
                sum = d2_add(sum, d2_div(d2_of((1 + b2) * matches[o]), d2_of(b2 * ref[o] + hyp[o])));
        if (sum.hi == 0.0) return zero;
        return d2_div(d2_mul(sum, d2_of(100.0)), d2_of(scoring->orders));
    }
    /* P = sP / E and R = sR / E over the E effective orders; 100 (1 + b^2) P R / (b^2 P + R) is
       100 (1 + b^2) sP sR / (E (b^2 sP + sR)). */
    Double2 sp = zero, sr = zero;
    int effective = 0;
    for (int o = 0; o < scoring->orders; o++) {
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

/* The texts of both sides, their units and per-order class ids, and the references' postings. */
typedef struct {
    Py_ssize_t texts; /* hypotheses first, then references */
    size_t *start;    /* texts + 1 offsets into points (code points) */
    uint32_t *points;
    size_t *unit_start[2]; /* [characters, words]: texts + 1 offsets into units and classes */
    uint32_t *units[2];
    uint32_t *classes[2]; /* per kind: order-major, order o's ids at classes + o * total units */
    uint32_t class_count[MAX_ORDERS];
} Corpus;

static void corpus_free(Corpus *corpus) {
    PyMem_Free(corpus->start);
    PyMem_Free(corpus->points);
    for (int kind = 0; kind < 2; kind++) {
        PyMem_Free(corpus->unit_start[kind]);
        PyMem_Free(corpus->units[kind]);
        PyMem_Free(corpus->classes[kind]);
    }
}

/* Every text's code points, one after another. -1 with an exception set. */
static int corpus_load(Corpus *corpus, PyObject *sides[2], Py_ssize_t counts[2]) {
    corpus->texts = counts[0] + counts[1];
    corpus->start = PyMem_Calloc((size_t)corpus->texts + 1, sizeof(size_t));
    if (corpus->start == NULL) return PyErr_NoMemory(), -1;
    size_t total = 0;
    for (Py_ssize_t t = 0; t < corpus->texts; t++) {
        int side = t >= counts[0];
        Py_ssize_t index = side ? t - counts[0] : t;
        PyObject *text = PySequence_GetItem(sides[side], index);
        if (text == NULL) return -1;
        Py_ssize_t length = PyUnicode_Check(text) ? PyUnicode_GetLength(text) : -1;
        Py_DECREF(text);
        if (length < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s[%zd] must be a str", side ? "references" : "hypotheses", index);
            return -1;
        }
        total += (size_t)length;
        if (total > MAX_LENGTH) {
            PyErr_SetString(PyExc_ValueError, "the texts are too long together for the native kernel");
            return -1;
        }
        corpus->start[t + 1] = total;
    }
    corpus->points = PyMem_Malloc((total ? total : 1) * sizeof(uint32_t));
    if (corpus->points == NULL) return PyErr_NoMemory(), -1;
    for (Py_ssize_t t = 0; t < corpus->texts; t++) {
        int side = t >= counts[0];
        PyObject *text = PySequence_GetItem(sides[side], side ? t - counts[0] : t);
        if (text == NULL) return -1;
        size_t length = corpus->start[t + 1] - corpus->start[t];
        int failed = !PyUnicode_Check(text) || (Py_ssize_t)length != PyUnicode_GetLength(text) ||
                     (length && PyUnicode_AsUCS4(text, (Py_UCS4 *)corpus->points + corpus->start[t],
                                                 (Py_ssize_t)length, 0) == NULL);
        Py_DECREF(text);
        if (failed) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "a text changed while being read");
            return -1;
        }
    }
    return 0;
}

/* Units of every text for one kind (0: characters, whitespace removed unless kept; 1: word tokens interned by
   content over all texts), then the class ids of orders 1..orders, each order from a fresh generation of work's
   pair table. -1 on failure (no memory). */
static int corpus_classes(Corpus *corpus, int kind, int orders, int keep_whitespace, Work *work) {
    const size_t points = corpus->start[corpus->texts];
    corpus->unit_start[kind] = PyMem_Calloc((size_t)corpus->texts + 1, sizeof(size_t));
    corpus->units[kind] = PyMem_Malloc((points ? points : 1) * sizeof(uint32_t));
    if (corpus->unit_start[kind] == NULL || corpus->units[kind] == NULL) return -1;
    uint32_t *units = corpus->units[kind];
    size_t total = 0;
    uint32_t tokens = 0;
    if (kind == 1) {
        if (reserve(work, 1, points) < 0) return -1;
        new_generation(work, points);
        if (++work->token_stamp == 0) {
            for (size_t i = 0; i < work->table_capacity; i++) work->tokens[i].stamp = 0;
            work->token_stamp = 1;
        }
    }
    for (Py_ssize_t t = 0; t < corpus->texts; t++) {
        const uint32_t *text = corpus->points + corpus->start[t];
        const size_t length = corpus->start[t + 1] - corpus->start[t];
        if (kind == 0) {
            for (size_t i = 0; i < length; i++)
                if (keep_whitespace || !is_space(text[i])) units[total++] = text[i];
        } else { /* tokenize reads work->raw[0] and writes work->units[0]: point them at this text */
            uint32_t *raw = work->raw[0], *ids = work->units[0];
            work->raw[0] = (uint32_t *)text;
            work->units[0] = units + total;
            total += tokenize(work, 0, length, &tokens);
            work->raw[0] = raw;
            work->units[0] = ids;
        }
        corpus->unit_start[kind][t + 1] = total;
    }
    corpus->classes[kind] = PyMem_Malloc(((size_t)orders * total + 1) * sizeof(uint32_t));
    if (corpus->classes[kind] == NULL || reserve(work, 1, total) < 0) return -1;
    for (int o = 0; o < orders; o++) {
        new_generation(work, total);
        uint32_t *now = corpus->classes[kind] + (size_t)o * total, ids = 0;
        const uint32_t *below = o ? now - total : NULL;
        for (Py_ssize_t t = 0; t < corpus->texts; t++) {
            const size_t from = corpus->unit_start[kind][t], to = corpus->unit_start[kind][t + 1];
            for (size_t i = from; i + (size_t)o < to; i++)
                now[i] = intern_pair(work, o ? below[i] : NO_CLASS, units[i + o], &ids);
        }
        corpus->class_count[kind ? MAX_ORDERS - 1 - o : o] = ids;
    }
    return 0;
}

#define PAIRS_PER_CHECK (1u << 18) /* pairwise: pairs scored between two looks for a pending signal */

/* A reference's occurrences of one class (one order's n-gram): which reference, how often. */
typedef struct {
    uint32_t reference, count;
} Posting;

/* Visit text t's distinct n-grams of every order, as (row, count): row is base[o] + class id. seen/where are
   per-row scratch (seen must not hold `mark` beforehand); entries receives the distinct rows in order. */
static size_t distinct_ngrams(const Corpus *corpus, Py_ssize_t t, int char_order, int orders, const size_t *base,
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

PyDoc_STRVAR(pairwise_doc,
             "pairwise(hypotheses, references, char_order, word_order, include_whitespace, beta, per_order_f,\n"
             "         tolerance_bits)\n--\n\n"
             "Every hypothesis against every reference: (a bytearray of native doubles, row-major len(hypotheses) x\n"
             "len(references), each the score rounded to the nearest double; a list of the flat indices whose\n"
             "rounding could not be decided within 2^-tolerance_bits of the value, to be computed exactly).\n"
             "Texts must already be lowercased if the settings ask for it.");

static PyObject *pairwise(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *sides[2];
    int char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits;
    if (!PyArg_ParseTuple(args, "OOiipipi:pairwise", &sides[0], &sides[1], &char_order, &word_order,
                          &keep_whitespace, &beta, &per_order_f, &tolerance_bits))
        return NULL;
    if (char_order < 0 || word_order < 0 || char_order + word_order > MAX_ORDERS || char_order + word_order == 0 ||
        beta < 1 || beta > 1000 || tolerance_bits < 1 || tolerance_bits > 100) {
        PyErr_SetString(PyExc_ValueError, "settings out of range");
        return NULL;
    }
    Py_ssize_t counts[2];
    for (int side = 0; side < 2; side++)
        if ((counts[side] = PySequence_Size(sides[side])) < 0) return NULL;
    const int orders = char_order + word_order;
    const size_t rows = (size_t)counts[0], columns = (size_t)counts[1];
    if (columns && rows > ((size_t)PY_SSIZE_T_MAX / sizeof(double)) / columns) return PyErr_NoMemory();
    if (columns >= UINT32_MAX) return PyErr_NoMemory();
    Scoring scoring = {orders, (double)beta * beta, per_order_f};
    double tolerance = 1.0;
    for (int k = 0; k < tolerance_bits; k++) tolerance /= 2;

    Corpus corpus;
    memset(&corpus, 0, sizeof corpus);
    Work work;
    memset(&work, 0, sizeof work);
    PyObject *matrix = NULL, *inexact = NULL, *result = NULL;
    uint32_t *totals = NULL, *matches = NULL, *seen = NULL, *where = NULL, *first = NULL;
    Posting *postings = NULL, *entries = NULL;
    size_t *flagged = NULL, flagged_count = 0, flagged_capacity = 0; /* flat indices whose rounding is undecided */
    if (corpus_load(&corpus, sides, counts) < 0) goto done;
    const int kinds[2] = {char_order, word_order};
    for (int kind = 0; kind < 2; kind++)
        if (kinds[kind] && corpus_classes(&corpus, kind, kinds[kind], keep_whitespace, &work) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    /* rows of the postings: order o's class c is row base[o] + c */
    size_t base[MAX_ORDERS + 1] = {0}, longest = 0;
    for (int o = 0; o < orders; o++) {
        int kind = o >= char_order, n = kind ? o - char_order + 1 : o + 1;
        base[o + 1] = base[o] + corpus.class_count[kind ? MAX_ORDERS - n : n - 1];
    }
    size_t reference_ngrams = 0;
    totals = PyMem_Calloc((size_t)corpus.texts * (size_t)orders + 1, sizeof(uint32_t));
    if (totals == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t t = 0; t < corpus.texts; t++) {
        size_t ngrams = 0;
        for (int o = 0; o < orders; o++) {
            int kind = o >= char_order, n = kind ? o - char_order + 1 : o + 1;
            size_t length = corpus.unit_start[kind][t + 1] - corpus.unit_start[kind][t];
            totals[(size_t)t * orders + o] = length >= (size_t)n ? (uint32_t)(length - n + 1) : 0;
            ngrams += totals[(size_t)t * orders + o];
        }
        if (t >= counts[0]) reference_ngrams += ngrams;
        if (ngrams > longest) longest = ngrams;
    }
    matches = PyMem_Calloc(columns * (size_t)orders + 1, sizeof(uint32_t));
    seen = PyMem_Malloc((base[orders] + 1) * sizeof(uint32_t));
    where = PyMem_Malloc((base[orders] + 1) * sizeof(uint32_t));
    first = PyMem_Calloc(base[orders] + 2, sizeof(uint32_t));
    postings = PyMem_Malloc((reference_ngrams + 1) * sizeof(Posting));
    entries = PyMem_Malloc((longest + 1) * sizeof(Posting));
    if (!matches || !seen || !where || !first || !postings || !entries) {
        PyErr_NoMemory();
        goto done;
    }
    inexact = PyList_New(0);
    matrix = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(rows * columns * sizeof(double)));
    if (inexact == NULL || matrix == NULL) goto done;
    double *scores = (double *)PyByteArray_AsString(matrix);
    if (scores == NULL) goto done;

    /* postings: how many references hold each row, then every reference's distinct rows in reference order */
    memset(seen, 0xFF, (base[orders] + 1) * sizeof(uint32_t));
    for (size_t j = 0; j < columns; j++) {
        size_t distinct = distinct_ngrams(&corpus, counts[0] + (Py_ssize_t)j, char_order, orders, base, (uint32_t)j,
                                          seen, where, entries);
        for (size_t e = 0; e < distinct; e++) first[entries[e].reference + 1]++;
    }
    for (size_t row = 0; row < base[orders]; row++) first[row + 1] += first[row];
    memset(seen, 0xFF, (base[orders] + 1) * sizeof(uint32_t));
    for (size_t j = 0; j < columns; j++) {
        size_t distinct = distinct_ngrams(&corpus, counts[0] + (Py_ssize_t)j, char_order, orders, base, (uint32_t)j,
                                          seen, where, entries);
        for (size_t e = 0; e < distinct; e++) {
            Posting *posting = &postings[first[entries[e].reference]++];
            posting->reference = (uint32_t)j;
            posting->count = entries[e].count;
        }
    }
    for (size_t row = base[orders]; row > 0; row--) first[row] = first[row - 1]; /* back to each row's start */
    first[0] = 0;

    /* each hypothesis: walk the postings of its distinct n-grams, then score its row. Nothing here touches a Python
       object, so other threads run meanwhile; the GIL is taken back between rows, once per PAIRS_PER_CHECK pairs
       (tens of milliseconds), only to let Ctrl-C through. */
    memset(seen, 0xFF, (base[orders] + 1) * sizeof(uint32_t));
    int interrupted = 0, out_of_memory = 0;
    size_t unchecked = 0;
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < rows && !interrupted && !out_of_memory; i++) {
        if ((unchecked += columns + 1) >= PAIRS_PER_CHECK) {
            unchecked = 0;
            Py_BLOCK_THREADS
            interrupted = PyErr_CheckSignals() < 0;
            Py_UNBLOCK_THREADS
        }
        size_t distinct = distinct_ngrams(&corpus, (Py_ssize_t)i, char_order, orders, base,
                                          (uint32_t)i, seen, where, entries);
        memset(matches, 0, columns * (size_t)orders * sizeof(uint32_t));
        for (size_t e = 0; e < distinct && !interrupted; e++) {
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
        for (size_t j = 0; j < columns && !interrupted; j++) {
            const uint32_t *ref = totals + (rows + j) * (size_t)orders;
            Double2 value = pair_score(&scoring, hyp, ref, matches + j * (size_t)orders);
            scores[i * columns + j] = value.hi;
            if (near_midpoint(value, tolerance)) {
                if (flagged_count == flagged_capacity) {
                    size_t capacity = flagged_capacity ? 2 * flagged_capacity : 64;
                    size_t *bigger = realloc(flagged, capacity * sizeof(size_t));
                    if (bigger == NULL) {
                        out_of_memory = 1;
                        break;
                    }
                    flagged = bigger;
                    flagged_capacity = capacity;
                }
                flagged[flagged_count++] = i * columns + j;
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (interrupted) goto done;
    if (out_of_memory) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t k = 0; k < flagged_count; k++) {
        PyObject *index = PyLong_FromSize_t(flagged[k]);
        if (index == NULL || PyList_Append(inexact, index) < 0) {
            Py_XDECREF(index);
            goto done;
        }
        Py_DECREF(index);
    }
    result = PyTuple_Pack(2, matrix, inexact);
done:
    PyMem_Free(totals);
    PyMem_Free(matches);
    PyMem_Free(seen);
    PyMem_Free(where);
    PyMem_Free(first);
    PyMem_Free(postings);
    PyMem_Free(entries);
    free(flagged); /* libc: PyMem_Raw* is outside the Limited API, PyMem_* needs the GIL */
    corpus_free(&corpus);
    release(&work);
    Py_XDECREF(matrix);
    Py_XDECREF(inexact);
    return result;
}

PyDoc_STRVAR(set_seed_doc, "set_seed(seed)\n--\n\nSeed the hash tables (once per process, from os.urandom).");

static PyObject *set_seed(PyObject *module, PyObject *seed) {
    (void)module;
    unsigned long long value = PyLong_AsUnsignedLongLongMask(seed);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    hash_seed = (uint64_t)value;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"count", count, METH_VARARGS, count_doc},
    {"pairwise", pairwise, METH_VARARGS, pairwise_doc},
    {"set_seed", set_seed, METH_O, set_seed_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_kernel", "Native n-gram counting for chrf_core.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module_definition); }
