/*
 * Big buffers kept between MBR calls (kernel.h's Keep): a call's corpus, tables and scratch come back to its Keep
 * when freed, and the next call (or the next set of a batch) takes them again instead of asking malloc for fresh
 * pages. Without it, glibc gives a call's heap back to the system when it ends (the heap's top is trimmed, big
 * blocks are unmapped) and the next call faults every page in again: the same call then costs twice as much as it
 * need, or not, from run to run.
 *
 * A block is kept only from KEEP_SMALLEST bytes (malloc recycles smaller ones itself); it carries its capacity. A
 * request takes the smallest kept block that holds it and is at most twice its size (else malloc's). After a call
 * (keep_settle) the blocks it did not take are freed beyond a quarter of what it used (a call that needs much less
 * gives the rest back; threads that split the next call's work otherwise still find theirs), and all of them when
 * together they pass KEEP_BYTES. Threads share a Keep under its lock (a few dozen big blocks a call). No
 * Python here.
 */
#include "kernel.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__) /* make sanitize: a kept block unusable until taken, then only its size, filled */
#include <sanitizer/asan_interface.h>
#define KEPT(block, size) ASAN_POISON_MEMORY_REGION(block, size)
#define TAKEN(block, capacity, size)                                                                               \
    do {                                                                                                           \
        ASAN_UNPOISON_MEMORY_REGION(block, size);                                                                  \
        memset(block, 0xBE, size); /* as ASan fills fresh memory: a read of what nobody wrote shows */             \
    } while (0)
#else
#define KEPT(block, size) \
    do {                  \
    } while (0)
#define TAKEN(block, capacity, size) \
    do {                             \
    } while (0)
#endif

#define KEEP_SMALLEST ((size_t)32 << 10) /* smaller blocks are malloc's alone */
#define KEEP_BYTES ((size_t)256 << 20)   /* kept between calls at most, else all given back */
#define KEEP_BLOCKS 256                  /* blocks kept at once at most */
#define HEADER 64 /* a kept-size block's capacity, before the bytes handed out (64 bytes: their alignment kept) */

typedef struct {
    unsigned char *block; /* its header */
    size_t size;          /* its capacity */
    uint32_t stamp; /* the call that gave it back last */
} Kept;

struct Keep {
    pthread_mutex_t lock;
    uint32_t stamp; /* this call's */
    size_t fresh;   /* bytes of kept-size blocks asked of malloc since it was made (none: every request was kept) */
    size_t count;
    Kept kept[KEEP_BLOCKS];
};

Keep *keep_new(void) {
    Keep *keep = calloc(1, sizeof(Keep));
    if (keep != NULL && pthread_mutex_init(&keep->lock, NULL) != 0) {
        free(keep);
        return NULL;
    }
    if (keep != NULL) keep->stamp = 1;
    return keep;
}

/* A kept block freed (ASan's poison lifted first: free checks its bytes' state). */
static void release(const Kept *kept) {
    TAKEN(kept->block + HEADER, kept->size, kept->size);
    free(kept->block);
}

void keep_delete(Keep *keep) {
    if (keep == NULL) return;
    for (size_t k = 0; k < keep->count; k++) release(&keep->kept[k]);
    pthread_mutex_destroy(&keep->lock);
    free(keep);
}

static void *fresh(size_t size, int zeroed) {
    unsigned char *block = zeroed ? calloc(1, HEADER + size) : malloc(HEADER + size);
    if (block == NULL) return NULL;
    *(size_t *)block = size;
    return block + HEADER;
}

void *keep_alloc(Keep *keep, size_t size, int zeroed) {
    if (size == 0) size = 1;
    if (keep == NULL || size < KEEP_SMALLEST) return zeroed ? calloc(1, size) : malloc(size);
    unsigned char *block = NULL;
    pthread_mutex_lock(&keep->lock);
    size_t best = keep->count;
    for (size_t k = 0; k < keep->count; k++) {
        const size_t held = keep->kept[k].size;
        if (held >= size && held / 2 <= size && (best == keep->count || held < keep->kept[best].size)) best = k;
    }
    if (best < keep->count) {
        block = keep->kept[best].block;
        keep->kept[best] = keep->kept[--keep->count];
    } else {
        keep->fresh += size;
    }
    pthread_mutex_unlock(&keep->lock);
    if (block == NULL) return fresh(size, zeroed);
    TAKEN(block + HEADER, *(size_t *)block, size);
    if (zeroed) memset(block + HEADER, 0, size);
    return block + HEADER;
}

void keep_free(Keep *keep, void *given, size_t size) {
    if (given == NULL) return;
    if (size == 0) size = 1;
    if (keep == NULL || size < KEEP_SMALLEST) {
        free(given);
        return;
    }
    unsigned char *block = (unsigned char *)given - HEADER;
    pthread_mutex_lock(&keep->lock);
    if (keep->count < KEEP_BLOCKS) {
        keep->kept[keep->count++] = (Kept){block, *(size_t *)block, keep->stamp};
        KEPT(block + HEADER, *(size_t *)block);
        block = NULL;
    }
    pthread_mutex_unlock(&keep->lock);
    free(block); /* no room to keep it */
}

void *keep_grow(Keep *keep, void *block, size_t size, size_t bigger) {
    void *grown = keep_alloc(keep, bigger, 0);
    if (grown == NULL) return NULL;
    if (size) memcpy(grown, block, size);
    keep_free(keep, block, size);
    return grown;
}

/* Kept blocks, the one given back last first. */
static int newer_first(const void *a, const void *b) {
    const uint32_t x = ((const Kept *)a)->stamp, y = ((const Kept *)b)->stamp;
    return (x < y) - (x > y);
}

void keep_settle(Keep *keep) {
    if (keep == NULL) return;
    pthread_mutex_lock(&keep->lock);
    size_t used = 0, total = 0, kept = 0, spares = 0;
    for (size_t k = 0; k < keep->count; k++) {
        total += keep->kept[k].size;
        if (keep->kept[k].stamp == keep->stamp) used += keep->kept[k].size;
    }
    /* This call's blocks first, then the others, newest first, while they stay within a quarter of what it used:
       a call whose threads split the work otherwise asks for its blocks in another order and finds them still. */
    const size_t spare = total <= KEEP_BYTES ? used / 4 : 0;
    Kept rest[KEEP_BLOCKS];
    for (size_t k = 0; k < keep->count; k++) {
        if (keep->kept[k].stamp == keep->stamp && total <= KEEP_BYTES) keep->kept[kept++] = keep->kept[k];
        else rest[spares++] = keep->kept[k];
    }
    qsort(rest, spares, sizeof(Kept), newer_first);
    size_t kept_spare = 0;
    for (size_t k = 0; k < spares; k++) {
        if (kept_spare + rest[k].size <= spare) {
            kept_spare += rest[k].size;
            keep->kept[kept++] = rest[k];
        } else {
            release(&rest[k]);
        }
    }
    keep->count = kept;
    if (++keep->stamp == 0) keep->stamp = 1;
    pthread_mutex_unlock(&keep->lock);
}

size_t keep_held(Keep *keep, size_t *fresh) {
    if (keep == NULL) return 0;
    pthread_mutex_lock(&keep->lock);
    size_t total = 0;
    for (size_t k = 0; k < keep->count; k++) total += keep->kept[k].size;
    if (fresh != NULL) *fresh = keep->fresh;
    pthread_mutex_unlock(&keep->lock);
    return total;
}
