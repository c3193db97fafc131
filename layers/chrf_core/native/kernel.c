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
    {"set_seed", set_seed, METH_O, set_seed_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_kernel", "Native n-gram counting for chrf_core.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module_definition); }
