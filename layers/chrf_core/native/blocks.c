/*
 * Large blocks kept between calls: a call's big buffers (texts, class ids, tables, scratch) come back to the next
 * call instead of being handed to the system and faulted in again, page by page (each fault costs more than
 * clearing the page, and faults of several threads queue on one lock). At most KEEP_BLOCKS blocks and KEEP_BYTES
 * are kept; a block is reused for a request of at least half its size. Thread-safe (no Python here).
 */
#include "kernel.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define KEEP_BLOCKS 48
#define KEEP_BYTES ((size_t)64 << 20)
#define KEPT_FROM ((size_t)64 << 10) /* smaller blocks go straight back to malloc */

typedef union { /* a block's size, before the block, which it keeps aligned as malloc aligns (C99: no max_align_t) */
    size_t size;
    long double a;
    void *b;
    long long c;
} Header;

static struct {
    Header *blocks[KEEP_BLOCKS];
    size_t count, bytes;
} kept;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

void *block_alloc(size_t bytes, int zeroed) {
    if (bytes > SIZE_MAX - sizeof(Header)) return NULL;
    Header *found = NULL;
    if (bytes >= KEPT_FROM) {
        pthread_mutex_lock(&kept_lock);
        size_t best = kept.count;
        for (size_t k = 0; k < kept.count; k++) {
            const size_t size = kept.blocks[k]->size;
            if (size >= bytes && size / 2 <= bytes && (best == kept.count || size < kept.blocks[best]->size)) best = k;
        }
        if (best < kept.count) {
            found = kept.blocks[best];
            kept.bytes -= found->size;
            kept.blocks[best] = kept.blocks[--kept.count];
        }
        pthread_mutex_unlock(&kept_lock);
    }
    if (found != NULL) {
        if (zeroed) memset(found + 1, 0, bytes);
        return found + 1;
    }
    found = zeroed ? calloc(1, sizeof(Header) + bytes) : malloc(sizeof(Header) + bytes);
    if (found == NULL) return NULL;
    found->size = bytes;
    return found + 1;
}

void block_free(void *block) {
    if (block == NULL) return;
    Header *header = (Header *)block - 1;
    if (header->size >= KEPT_FROM) {
        pthread_mutex_lock(&kept_lock);
        const int keep = kept.count < KEEP_BLOCKS && kept.bytes + header->size <= KEEP_BYTES;
        if (keep) {
            kept.blocks[kept.count++] = header;
            kept.bytes += header->size;
        }
        pthread_mutex_unlock(&kept_lock);
        if (keep) return;
    }
    free(header);
}
