/* pairwise.c: every hypothesis against every reference (minimum Bayes risk decoding), no Python here. */
#ifndef CHRF_PAIRWISE_H
#define CHRF_PAIRWISE_H

#include "kernel.h"

typedef struct {
    int char_order, word_order, keep_whitespace, per_order_f;
    double beta_squared;
    double tolerance; /* a score this close (relative) to a rounding midpoint is flagged for exact computation */
} Scoring;

/* The texts: rows hypotheses then columns references, text t's code points at points[start[t]..start[t + 1]). */
typedef struct {
    const uint32_t *points;
    const size_t *start;
    size_t rows, columns;
} Texts;

/* Indices of the matrix whose rounding could not be decided, to be computed exactly by the caller. */
typedef struct {
    size_t *indices;
    size_t count, capacity;
} Flagged;

/* Pauses for the caller between rows, about every 2^18 pairs (nonzero: stop); NULL never pauses. */
typedef int (*Pause)(void *context);

/* Fill scores[i * columns + j] for every pair, each the score rounded to the nearest double. Returns 0; 1 when the
   pause said stop; -1 when out of memory. flagged->indices is the caller's to free (free()). */
int pairwise_scores(const Texts *texts, const Scoring *scoring, double *scores, Flagged *flagged, Pause pause,
                    void *context);

#endif
