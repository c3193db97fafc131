/*
 * An MBR call's run, above the corpus builder (corpus_ids.c): its begin (the corpus, each thread's scratch) and end
 * (the threads' flagged indices gathered, everything freed), and a text's distinct n-grams, which pairwise.c and
 * aggregate.c score from. No Python here.
 */
#include "mbr.h"

#include <stdlib.h>
#include <string.h>

size_t distinct_ngrams(const Corpus *corpus, size_t t, int orders, uint32_t mark, uint32_t *seen,
                       uint32_t *where, Posting *entries) {
    const size_t *base = corpus->base;
    size_t distinct = 0;
    for (int o = 0; o < orders; o++) {
        const int kind = order_kind(corpus, o), n = order_n(corpus, o);
        const uint32_t *ids = order_ids(corpus, o);
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


/* Each thread's scratch sizes in bytes: matches, seen, where, entries, values (Scratch's order). */
static void scratch_sizes(const Run *run, size_t sizes[5]) {
    const Corpus *corpus = &run->corpus;
    const int orders = corpus->orders[0] + corpus->orders[1];
    sizes[0] = run->matches * sizeof(uint32_t);
    sizes[1] = sizes[2] = (corpus->base[orders] + 1) * sizeof(uint32_t);
    sizes[3] = (corpus->longest + 1) * sizeof(Posting);
    sizes[4] = 3 * (size_t)orders * sizeof(double);
}

int run_begin(Run *run, const Texts *texts, const Scoring *scoring, int threads, int count_columns, size_t matches,
              Keep *keep, Pause pause, void *context) {
    memset(run, 0, sizeof *run);
    run->threads = threads_for(threads, texts->rows); /* no idle scratch */
    run->matches = matches;
    const int built = corpus_build(&run->corpus, texts, scoring, run->threads, count_columns, keep, pause, context);
    if (built != 0) return built;
    size_t sizes[5];
    scratch_sizes(run, sizes);
    for (int w = 0; w < run->threads; w++) {
        Scratch *s = &run->scratch[w];
        s->matches = matches ? keep_alloc(keep, sizes[0], 0) : NULL;
        s->seen = keep_alloc(keep, sizes[1], 0);
        s->where = keep_alloc(keep, sizes[2], 0);
        s->entries = keep_alloc(keep, sizes[3], 0);
        s->values = keep_alloc(keep, sizes[4], 0);
        if ((matches && !s->matches) || !s->seen || !s->where || !s->entries || !s->values) return -1;
        memset(s->seen, 0xFF, sizes[1]);
    }
    return 0;
}

int run_end(Run *run, Flagged *flagged, int status) {
    size_t sizes[5];
    scratch_sizes(run, sizes);
    Keep *keep = run->corpus.keep;
    for (int w = 0; w < run->threads; w++) {
        for (size_t k = 0; status == 0 && k < run->found[w].count; k++)
            if (flag(flagged, run->found[w].indices[k]) < 0) status = -1;
        free(run->found[w].indices);
        keep_free(keep, run->scratch[w].matches, sizes[0]);
        keep_free(keep, run->scratch[w].seen, sizes[1]);
        keep_free(keep, run->scratch[w].where, sizes[2]);
        keep_free(keep, run->scratch[w].entries, sizes[3]);
        keep_free(keep, run->scratch[w].values, sizes[4]);
    }
    corpus_free(&run->corpus);
    return status;
}
