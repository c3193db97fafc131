/*
 * The kernel's one pair table (kernel.h's PairTable, (class, unit) -> class, open addressing, compared exactly:
 * counting.c, systems.c and corpus_ids.c all use it, through classes.h's refine), the word token table (interned by
 * content), chrF++.py's tokenizer, and the buffers of counting (no Python here).
 * Hashes are seeded per process (hash_seed), so an attacker cannot build inputs that collide in the tables.
 */
#include "kernel.h"

#include <stdlib.h>
#include <string.h>

uint64_t hash_seed = 0x243F6A8885A308D3ull;

static inline int is_ascii_punctuation(uint32_t c) {
    /* string.punctuation: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ */
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
}

static int grow(void **buffer, size_t *room, size_t count, size_t size) {
    if (count <= *room) return 0;
    void *bigger = realloc(*buffer, count * size);
    if (bigger == NULL) return -1;
    *buffer = bigger;
    *room = count;
    return 0;
}

/* A table of at least `count` slots, all stamps 0 (calloc: pages cost memory only once used). */
static int grow_zeroed(void **table, size_t *room, size_t count, size_t size) {
    if (count <= *room) return 0;
    free(*table);
    *room = 0;
    if ((*table = calloc(count, size)) == NULL) return -1;
    *room = count;
    return 0;
}

/* Slots for `keys` keys at a load of at most 2/3 (linear probing stays short). */
static inline size_t slots_for(size_t keys) { return keys + keys / 2 + 16; }

/* A pair table's room for `keys` distinct keys, its stamps all 0. 0, or -1 when out of memory. */
int pair_table_reserve(PairTable *table, size_t keys) {
    return grow_zeroed((void **)&table->slots, &table->room, slots_for(keys), sizeof(Slot));
}

/* A fresh generation of a reserved table, sized for `keys` keys: empty at once. */
void pair_table_generation(PairTable *table, size_t keys) {
    table->size = (uint32_t)slots_for(keys);
    table->used = 0;
    if (++table->stamp == 0) { /* wrapped after 2^32 generations: clear every stamp once */
        for (size_t i = 0; i < table->room; i++) table->slots[i].stamp = 0;
        table->stamp = 1;
    }
}

int pair_table_room(PairTable *table, size_t keys, Keep *keep) {
    if (table->slots != NULL && 2 * (table->used + keys) <= table->size) return 0;
    size_t size = table->slots != NULL ? 2 * (size_t)table->size : 64;
    while (size < 2 * (table->used + keys)) size *= 2;
    if (size > UINT32_MAX) return -1;
    Slot *grown = keep_alloc(keep, size * sizeof(Slot), 1);
    if (grown == NULL) return -1;
    for (uint32_t i = 0; table->slots != NULL && i < table->size; i++) {
        const Slot slot = table->slots[i];
        if (slot.stamp != table->stamp) continue;
        uint32_t at = slot_of(mix64(((uint64_t)slot.first << 32) | slot.second), (uint32_t)size);
        while (grown[at].stamp == 1) at = at + 1 == size ? 0 : at + 1;
        grown[at] = (Slot){slot.first, slot.second, slot.value, 1};
    }
    keep_free(keep, table->slots, table->room * sizeof(Slot));
    table->slots = grown;
    table->room = size;
    table->size = (uint32_t)size;
    table->stamp = 1;
    return 0;
}

uint32_t intern_pair(PairTable *table, uint32_t first, uint32_t second, uint32_t *ids) {
    return pair_intern(table, first, second, ids);
}

uint32_t find_pair(const PairTable *table, uint32_t first, uint32_t second) { return pair_find(table, first, second); }

int tokens_reserve(TokenTable *table, size_t tokens) {
    return grow_zeroed((void **)&table->slots, &table->room, slots_for(tokens), sizeof(TokenSlot));
}

void tokens_generation(TokenTable *table, const uint32_t *base, size_t tokens) {
    table->base = base;
    table->size = (uint32_t)slots_for(tokens);
    if (++table->stamp == 0) {
        for (size_t i = 0; i < table->room; i++) table->slots[i].stamp = 0;
        table->stamp = 1;
    }
}

static inline uint32_t intern_token(TokenTable *table, const uint32_t *text, uint32_t length, uint32_t *tokens) {
    uint64_t hash = (uint64_t)length * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < length; i++) hash = (hash ^ text[i]) * 0x100000001B3ull + (hash >> 29);
    hash = mix64(hash);
    const uint32_t check = (uint32_t)hash;
    uint32_t index = slot_of(hash, table->size);
    for (;;) {
        TokenSlot *slot = &table->slots[index];
        if (slot->stamp != table->stamp) {
            *slot = (TokenSlot){check, (uint32_t)(text - table->base), length, (*tokens)++, table->stamp};
            return slot->value;
        }
        if (slot->hash == check && slot->length == length &&
            memcmp(table->base + slot->offset, text, length * sizeof(uint32_t)) == 0)
            return slot->value;
        if (++index == table->size) index = 0;
    }
}

size_t tokenize(TokenTable *table, const uint32_t *text, size_t length, uint32_t *ids, uint32_t *tokens, Pause pause,
                void *context) {
    size_t count = 0, i = 0, next_pause = POLL_MASK + 1;
    while (i < length) {
        if (pause_now(i, &next_pause, pause, context)) return TOKENIZE_INTERRUPTED;
        while (i < length && is_space(text[i])) i++;
        if (i == length) break;
        size_t start = i;
        while (i < length && !is_space(text[i])) i++;
        uint32_t size = (uint32_t)(i - start);
        const uint32_t *word = text + start;
        if (size > 1 && is_ascii_punctuation(word[size - 1])) {
            ids[count++] = intern_token(table, word, size - 1, tokens);
            ids[count++] = intern_token(table, word + size - 1, 1, tokens);
        } else if (size > 1 && is_ascii_punctuation(word[0])) {
            ids[count++] = intern_token(table, word, 1, tokens);
            ids[count++] = intern_token(table, word + 1, size - 1, tokens);
        } else {
            ids[count++] = intern_token(table, word, size, tokens);
        }
    }
    return count;
}

/* Word tokens of `texts` texts totalling `positions` code points: a text of x code points holds at most
   2 (x + 1) / 3 tokens, and at most (x + 1) / 2 distinct ones besides the 32 punctuation marks. */
static size_t tokens_bound(size_t positions, size_t texts) { return 2 * (positions + texts) / 3 + 1; }
size_t distinct_tokens_bound(size_t positions, size_t texts) { return (positions + texts) / 2 + 33; }

int work_reserve(Work *work, size_t positions, size_t texts, size_t shorter, int words) {
    size_t room = work->positions, tokens_room = work->tokens_room, classes = work->classes_room;
    if (grow((void **)&work->raw, &room, positions + 1, sizeof(uint32_t)) < 0) return -1;
    room = work->positions;
    if (grow((void **)&work->cls, &room, positions + 1, sizeof(uint32_t)) < 0) return -1;
    room = work->positions;
    if (grow((void **)&work->alive, &room, positions + 1, sizeof(uint32_t)) < 0) return -1;
    work->positions = room;
    if (words && grow((void **)&work->units, &tokens_room, tokens_bound(positions, texts), sizeof(uint32_t)) < 0)
        return -1;
    work->tokens_room = tokens_room;
    for (int k = 0; k < 2; k++) {
        size_t info_room = work->classes_room, partner_room = work->classes_room;
        if (grow((void **)&work->info[k], &info_room, shorter + 1, sizeof(ClassInfo)) < 0 ||
            grow((void **)&work->partner[k], &partner_room, shorter + 1, sizeof(uint32_t)) < 0)
            return -1;
        classes = info_room;
    }
    work->classes_room = classes;
    if (pair_table_reserve(&work->pairs, shorter) < 0 ||
        (words && tokens_reserve(&work->tokens, distinct_tokens_bound(positions, texts)) < 0))
        return -1;
    if (work->direct == NULL && (work->direct = calloc(DIRECT_SLOTS, sizeof(DirectSlot))) == NULL) return -1;
    for (int side = 0; side < 2; side++)
        if (work->histogram[side] == NULL && (work->histogram[side] = calloc(DIRECT_SLOTS, sizeof(uint32_t))) == NULL)
            return -1;
    if (work->ranks == NULL && (work->ranks = calloc(CODE_POINTS, sizeof(DirectSlot))) == NULL) return -1;
    return 0;
}

void work_release(Work *work) {
    free(work->raw);
    free(work->units);
    free(work->cls);
    free(work->alive);
    for (int k = 0; k < 2; k++) {
        free(work->info[k]);
        free(work->partner[k]);
    }
    free(work->pairs.slots);
    free(work->tokens.slots);
    free(work->direct);
    free(work->histogram[0]);
    free(work->histogram[1]);
    free(work->ranks);
    Pause pause = work->pause;
    void *pause_context = work->pause_context;
    memset(work, 0, sizeof *work);
    work->pause = pause;
    work->pause_context = pause_context;
}
