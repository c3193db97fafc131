/*
 * chrf_core._kernel: the per-order n-gram counts of chrF / chrF++ in C, and the pairwise scores of MBR decoding.
 *
 * C99, libc only below the glue; texts come in as code points. They count exactly what chrf_core's pure-Python kernel
 * counts: code points, the contract's whitespace removal, chrF++.py word tokens, clipped matches, sums over segments.
 * The files in reading order, each calling and including only those above it:
 *
 *   1. kernel.h      the shared types: Work (one call's buffers), the pause convention, the pair table's type
 *   2. keep.c        big buffers kept between MBR calls (the Keep: blocks given back, taken again)
 *   3. tables.c      the one pair table, the word token table and chrF++.py's tokenizer, the buffers
 *   4. classes.h     the one class-refinement step (refine: memo, direct table, pair table), the histogram start
 *                    (count_by_code) and dense ranks
 *   5. counting.c    one hypothesis against one reference, order by order over the positions that can still match
 *   6. systems.c     one reference against several systems' hypotheses, the reference counted once
 *   7. double2.h     double-double arithmetic
 *   8. mbr.h         minimum Bayes risk decoding's types: the texts, the corpus, a run, the pool's schedules
 *   9. scores.c      scores in double-double, rounded once, undecided ones flagged for exact computation
 *  10. threads.c     the one pool of threads, running a schedule's tasks; rows in chunks (parallel_rows)
 *  11. corpus_ids.c  the corpus builder: every text's n-grams as class ids, a wavefront of stages on the pool
 *  12. corpus.c      an MBR call's run: the corpus and each thread's scratch, begun and ended; distinct n-grams
 *  13. pairwise.c    every hypothesis against every reference, through the references' postings (or dense counts)
 *  14. aggregate.c   every hypothesis against the references' summed (or weighted) counts
 *  15. module.h      the CPython glue's shared part (Limited API 3.11: one _kernel.abi3.so for Python 3.11 on)
 *  16. module_mbr.c  the MBR entry point: texts copied out once, the work done without the GIL
 *  17. module.c      the module: counting's entry points, and its method table
 *
 * (tests/unit/test_kernel_files.py holds the files to this order.)
 */
#ifndef CHRF_KERNEL_H
#define CHRF_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAX_ORDERS 14
#define NO_CLASS 0xFFFFFFFFu   /* no unit or class id reaches these values */
#define MAX_LENGTH 0x0FFFFFFFu /* code points of one text (pairwise: of all texts): every index fits 32 bits */
#define CODE_POINTS 0x110000u
/* Direct-table slots (4 MB, touched only as far as used): (class, unit) pairs while classes * alphabet fits. */
#define DIRECT_SLOTS (1u << 19)

/* (first, second) -> value, valid while stamp is the table's; 16 bytes, no padding. */
typedef struct {
    uint32_t first, second, value, stamp;
} Slot;

/* The kernel's one hash table: (first, second) -> value, open addressing with linear probing, keys compared exactly,
   hashes seeded per process (mix64). A new generation empties it at once (slots count only while stamped with the
   table's stamp). Counting sizes each generation for its keys; the MBR corpus's tables, whose keys are not known in
   advance, are given room as their texts come (pair_table_room). */
typedef struct {
    Slot *slots;
    size_t room;          /* slots allocated */
    uint32_t size, stamp; /* slots of this generation, and its stamp */
    size_t used;          /* keys added in this generation */
} PairTable;

/* A word token by content: where its code points are (an offset from the table's base), its id. */
typedef struct {
    uint32_t hash, offset, length, value, stamp;
} TokenSlot;

/* The word token table: tokens interned by content (equal tokens, equal ids) for texts at `base`, open addressing
   over `size` of its `room` slots, a new generation emptying it at once (stamp). Counting keeps one in its Work;
   the MBR corpus builder (corpus_ids.c) one of its own. */
typedef struct {
    TokenSlot *slots;
    size_t room;
    uint32_t size, stamp;
    const uint32_t *base;
} TokenTable;

typedef struct {
    uint32_t stamp, value;
} DirectSlot;

/* The one pause convention: asked now and then during long passes (with the context it was given), about every
   POLL_MASK + 1 units of work; nonzero stops the work, whose caller then reports why (Ctrl-C). NULL never stops.
   Work that can be stopped returns 0 when done, 1 when the pause stopped it and -1 when out of memory. */
typedef int (*Pause)(void *context);

/* What one order keeps per class, side by side so that a position touches one cache line for its class. */
typedef struct {
    uint32_t count[2];   /* occurrences on the side counted first [0] and the other side [1] */
    uint32_t memo[2];    /* the unit its first continuing member continues with (or NO_CLASS), and the class of that
                            continuation at the next order (classes.h: refine) */
} ClassInfo;

/*
 * Buffers reused across the segments of one call (and, up to KEEP_POSITIONS, across calls), grown to the largest
 * segment. Per position (both sides of a segment, one after the other): its code point, its class, whether alive;
 * per class (at most the shorter side's positions): ClassInfo and partner for two orders. About 62 bytes per code
 * point at most, chrF++ included.
 */
typedef struct {
    uint32_t *raw;      /* code points of both sides; characters are compacted in place for character orders */
    uint32_t *units;    /* word token ids of both sides */
    uint32_t *cls;      /* class id of the n-gram starting at each position */
    uint32_t *alive;    /* positions that can still match */
    ClassInfo *info[2]; /* [this order's, the next order's] */
    uint32_t *partner[2];
    size_t positions, tokens_room, classes_room; /* capacities */
    PairTable pairs;
    TokenTable tokens;
    DirectSlot *direct;
    uint32_t direct_stamp;
    uint32_t *histogram[2]; /* per side: DIRECT_SLOTS occurrence counts indexed by n-gram code, kept cleared */
    DirectSlot *ranks;      /* code point -> dense rank, CODE_POINTS slots touched only as far as used */
    uint32_t rank_stamp;
    Pause pause; /* asked during long passes (poll, stop_after), with pause_context: nonzero stops the count */
    void *pause_context;
} Work;

extern uint64_t hash_seed;

/* A 64-bit key mixed with the process's seed (tables.c): the tables' hash. */
static inline uint64_t mix64(uint64_t x) {
    x ^= hash_seed;
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 33;
    return x;
}


#define POLL_MASK 0xFFFFFu /* units of work (code points, n-grams, pairs) between two looks at the pause, less one */

/* Whether to stop, in a loop over positions: asked once every POLL_MASK + 1 positions. */
static inline int poll(Work *work, size_t done) {
    return ((done + 1) & POLL_MASK) == 0 && work->pause != NULL && work->pause(work->pause_context);
}

/* After a pass over `size` units: whether to stop (only passes long enough to delay an interruption look). */
static inline int stop_after(Work *work, size_t size) {
    return size > POLL_MASK && work->pause != NULL && work->pause(work->pause_context);
}

/* Whether to stop, where work comes in uneven steps (`done` units so far): asked once `done` has passed *next, which
   then moves on by POLL_MASK + 1. */
static inline int pause_now(size_t done, size_t *next, Pause pause, void *context) {
    if (done < *next) return 0;
    *next = done + POLL_MASK + 1;
    return pause != NULL && pause(context);
}

static inline int is_space(uint32_t c) {
    /* The contract's whitespace: U+0009-U+000D, U+001C-U+001F, U+0020, U+0085, U+00A0, U+1680,
       U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 (exactly what Python's str.split() splits on). */
    if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    if (c < 0x85) return 0;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* What character n-grams are made of: text[0..length) copied to `to` (text itself, or before it) without the
   contract's whitespace unless `keep`; how many units that is. */
static inline size_t counted_characters(uint32_t *to, const uint32_t *text, size_t length, int keep) {
    size_t at = 0;
    for (size_t i = 0; i < length; i++)
        if (keep || !is_space(text[i])) to[at++] = text[i];
    return at;
}

/* How many n-grams of n units a text of `length` units has. */
static inline size_t ngrams_in(size_t length, int n) { return length >= (size_t)n ? length - (size_t)n + 1 : 0; }

/* Whether two texts are the same units: then every n-gram of one matches one of the other, and no class is built. */
static inline int same_units(const uint32_t *a, size_t length_a, const uint32_t *b, size_t length_b) {
    return length_a == length_b && memcmp(a, b, length_a * sizeof(uint32_t)) == 0;
}

/* A unique pair, an n-gram that occurs once on each side (position i of side a, j of side b, alike through order
   n): for how many more orders, up to the top one, the two sequences continue alike (and so match). */
static inline size_t alike_beyond(const uint32_t *units_a, size_t length_a, const uint32_t *units_b, size_t length_b,
                                  size_t i, size_t j, int n, int orders) {
    size_t same = 0;
    while (n + (int)same < orders && i + n + same < length_a && j + n + same < length_b &&
           units_a[i + n + same] == units_b[j + n + same])
        same++;
    return same;
}

/* The matches of a text against the same text, order by order, added to out's (.., .., matches) triples. */
static inline void add_all_matches(int64_t *out, size_t length, int orders) {
    for (int n = 1; n <= orders; n++) out[3 * (n - 1) + 2] += (int64_t)ngrams_in(length, n);
}

/* Big buffers kept between MBR calls (keep.c): blocks from keep_alloc go back with keep_free (the size asked for),
   to be taken again by the next request they fit; keep_settle after a call gives back what it did not take beyond
   a quarter of what it used. A NULL Keep is malloc and free. */
typedef struct Keep Keep;
Keep *keep_new(void);
void keep_delete(Keep *keep);
/* At least `size` bytes (zeroed if asked), or NULL when out of memory. */
void *keep_alloc(Keep *keep, size_t size, int zeroed);
void keep_free(Keep *keep, void *block, size_t size);
/* A block of `bigger` bytes holding block's first `size` (block given back), or NULL (block kept) when out of
   memory. */
void *keep_grow(Keep *keep, void *block, size_t size, size_t bigger);
void keep_settle(Keep *keep);
/* The bytes kept now; *fresh (unless NULL): the bytes of kept-size blocks it has had to ask malloc for since it was
   made (a call that took every block it needed from the Keep adds none). */
size_t keep_held(Keep *keep, size_t *fresh);

/* A pair table's room for `keys` distinct keys (0, or -1: no memory), and a fresh generation sized for them. */
int pair_table_reserve(PairTable *table, size_t keys);
void pair_table_generation(PairTable *table, size_t keys);
/* Room in a table that grows with its keys (the MBR corpus's) for `keys` more, at most half full (64 slots at
   first, doubled as needed, its keys kept): asked before adding them. 0, or -1 when out of memory. */
int pair_table_room(PairTable *table, size_t keys, Keep *keep);
uint32_t intern_pair(PairTable *table, uint32_t first, uint32_t second, uint32_t *ids);
uint32_t find_pair(const PairTable *table, uint32_t first, uint32_t second);

static inline uint32_t slot_of(uint64_t hash, uint32_t slots) { return (uint32_t)(((hash >> 32) * slots) >> 32); }

/* The value of (first, second), added as the next id (*ids, then counted up) if the table lacks it (the table has
   room: pair_table_generation or pair_table_room made it). Inline here for a loop that probes at every position
   (corpus_ids.c's first order); intern_pair and find_pair (tables.c) are the same as calls, which keep the loops
   that seldom reach the table (classes.h's refine) small. */
static inline uint32_t pair_intern(PairTable *table, uint32_t first, uint32_t second, uint32_t *ids) {
    uint32_t index = slot_of(mix64(((uint64_t)first << 32) | second), table->size);
    for (;; index = index + 1 == table->size ? 0 : index + 1) {
        Slot *slot = &table->slots[index];
        if (slot->stamp != table->stamp) {
            table->used++;
            *slot = (Slot){first, second, (*ids)++, table->stamp};
            return slot->value;
        }
        if (slot->first == first && slot->second == second) return slot->value;
    }
}

/* The value of (first, second), or NO_CLASS. */
static inline uint32_t pair_find(const PairTable *table, uint32_t first, uint32_t second) {
    uint32_t index = slot_of(mix64(((uint64_t)first << 32) | second), table->size);
    for (;; index = index + 1 == table->size ? 0 : index + 1) {
        const Slot *slot = &table->slots[index];
        if (slot->stamp != table->stamp) return NO_CLASS;
        if (slot->first == first && slot->second == second) return slot->value;
    }
}
/* The token table for texts at `base` holding up to `tokens` distinct tokens, a fresh generation of it, and
   chrF++.py's separate_punctuation over text[0..length) (text within base): token ids into ids, their number. */
int tokens_reserve(TokenTable *table, size_t tokens);
/* At most how many distinct word tokens `texts` texts totalling `positions` code points hold. */
size_t distinct_tokens_bound(size_t positions, size_t texts);
void tokens_generation(TokenTable *table, const uint32_t *base, size_t tokens);
#define TOKENIZE_INTERRUPTED SIZE_MAX
/* The word tokens of text as ids (interned: equal tokens, equal ids); their number, or TOKENIZE_INTERRUPTED when
   `pause` said stop. */
size_t tokenize(TokenTable *table, const uint32_t *text, size_t length, uint32_t *ids, uint32_t *tokens, Pause pause,
                void *context);
/* Room for a segment of `texts` texts totalling `positions` code points whose classes come from `shorter` of them
   (the shorter side of a pair, or the reference), and (`words`) for its word tokens. 0 or -1. */
int work_reserve(Work *work, size_t positions, size_t texts, size_t shorter, int words);
void work_release(Work *work);
/* Add the counts of one segment (its sides' code points in work->raw: hypothesis then reference) to out:
   out[3 * (n - 1) + {0, 1, 2}] for character orders, then word orders. 0, or 1 when interrupted. */
int count_segment(Work *work, size_t length_h, size_t length_r, int char_order, int word_order, int keep_whitespace,
                  int64_t *out);
/* The counts of one segment against several systems: texts[0] is the reference and texts[1..] the systems'
   hypotheses, their code points one after another in work->raw (lengths[k] each); system k's row of
   3 * (char_order + word_order) values is set at out + stride * (k - 1). `scratch` holds 5 * texts sizes and
   `units` texts pointers. 0, or 1 when interrupted. */
int count_systems(Work *work, const size_t *lengths, size_t texts, int char_order, int word_order, int keep_whitespace,
                  size_t *scratch, const uint32_t **units, int64_t *out, size_t stride);

#endif
