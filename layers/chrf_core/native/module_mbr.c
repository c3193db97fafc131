/*
 * The minimum Bayes risk entry points of chrf_core._kernel (pairwise, aggregate): every text's code points copied
 * out once, the work done by pairwise.c and aggregate.c without the GIL, the undecided indices handed back.
 */
#include "module.h"

#include <stdlib.h>
#include <string.h>

#include "mbr.h"

/* Every text's code points, one after another (hypotheses, then references). -1 with an exception set. */
static int load_texts(PyObject *sides[2], Py_ssize_t counts[2], uint32_t **points, size_t **start) {
    const size_t texts = (size_t)counts[0] + (size_t)counts[1];
    *start = calloc(texts + 1, sizeof(size_t));
    if (*start == NULL) return PyErr_NoMemory(), -1;
    size_t total = 0, next_pause = POLL_MASK + 1;
    for (size_t t = 0; t < texts; t++) {
        if (pause_now(t + (*start)[t], &next_pause, signalled, NULL)) return -1; /* texts and code points read */
        int side = t >= (size_t)counts[0];
        Py_ssize_t index = side ? (Py_ssize_t)t - counts[0] : (Py_ssize_t)t;
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
        (*start)[t + 1] = total;
    }
    *points = malloc((total ? total : 1) * sizeof(uint32_t));
    if (*points == NULL) return PyErr_NoMemory(), -1;
    next_pause = POLL_MASK + 1;
    for (size_t t = 0; t < texts; t++) {
        if (pause_now(t + (*start)[t], &next_pause, signalled, NULL)) return -1; /* texts and code points read */
        int side = t >= (size_t)counts[0];
        PyObject *text = PySequence_GetItem(sides[side], side ? (Py_ssize_t)t - counts[0] : (Py_ssize_t)t);
        if (text == NULL) return -1;
        size_t length = (*start)[t + 1] - (*start)[t];
        int failed = !PyUnicode_Check(text) || (Py_ssize_t)length != PyUnicode_GetLength(text) ||
                     (length &&
                      PyUnicode_AsUCS4(text, (Py_UCS4 *)*points + (*start)[t], (Py_ssize_t)length, 0) == NULL);
        Py_DECREF(text);
        if (failed) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "a text changed while being read");
            return -1;
        }
    }
    return 0;
}

/* One MBR call without the GIL: its thread state meanwhile. */
typedef struct {
    PyThreadState *state;
} Released;

/* While an MBR call runs without the GIL: take it back for a moment to see whether Ctrl-C was pressed (asked on the
   calling thread alone, which is the one that sees signals). */
static int pause_for_signals(void *context) {
    Released *released = context;
    PyEval_RestoreThread(released->state);
    const int stop = PyErr_CheckSignals() < 0;
    released->state = PyEval_SaveThread();
    return stop;
}

/* The arguments both MBR functions share: the texts, the settings, the threads and the output buffer(s). */
typedef struct {
    PyObject *sides[2];
    Py_ssize_t counts[2];
    Scoring scoring;
    int threads;
    double *scores;
    int64_t *counts_out;
    const Double2 *weights; /* aggregate: one per reference, or NULL */
} MbrCall;

/* The kernel's own bounds, not the contract's ranges (CHRF checks those): orders its buffers hold, a beta whose
   square keeps every product of counts exact in a double, a tolerance a double-double can resolve. */
static int mbr_settings(MbrCall *call, int char_order, int word_order, int keep_whitespace, int beta, int per_order_f,
                        int tolerance_bits) {
    if (char_order < 0 || word_order < 0 || char_order + word_order > MAX_ORDERS || char_order + word_order == 0 ||
        beta < 1 || beta > 1000 || tolerance_bits < 1 || tolerance_bits > 100 || call->threads < 1 ||
        call->threads > MAX_THREADS) {
        PyErr_SetString(PyExc_ValueError, "settings out of range");
        return -1;
    }
    call->scoring = (Scoring){char_order, word_order, keep_whitespace, per_order_f, (double)beta * beta, 1.0};
    for (int k = 0; k < tolerance_bits; k++) call->scoring.tolerance /= 2;
    for (int side = 0; side < 2; side++)
        if ((call->counts[side] = PySequence_Size(call->sides[side])) < 0) return -1;
    if ((size_t)call->counts[0] >= UINT32_MAX || (size_t)call->counts[1] >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many texts");
        return -1;
    }
    return 0;
}

/* A writable C-contiguous buffer of exactly `size` bytes, or -1 with ValueError naming it. */
static int output(PyObject *object, Py_buffer *view, size_t size, const char *what) {
    if (PyObject_GetBuffer(object, view, PyBUF_CONTIG) < 0) return -1;
    if ((size_t)view->len != size) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s has the wrong size", what);
        return -1;
    }
    return 0;
}

static PyObject *flagged_list(const Flagged *flagged) {
    PyObject *result = PyList_New((Py_ssize_t)flagged->count);
    for (size_t k = 0; result != NULL && k < flagged->count; k++) {
        PyObject *index = PyLong_FromSize_t(flagged->indices[k]);
        if (index == NULL) Py_CLEAR(result);
        else PyList_SetItem(result, (Py_ssize_t)k, index);
    }
    return result;
}

/* One call's texts, its code points copied out (load_texts) and what it flagged; freed by drop_call. */
typedef struct {
    uint32_t *points;
    size_t *start;
    Texts texts;
    Flagged flagged;
} Loaded;

static int load_call(const MbrCall *call, Loaded *loaded) {
    const int same = call->sides[0] == call->sides[1]; /* the samples as their own references: read once */
    Py_ssize_t counts[2] = {call->counts[0], same ? 0 : call->counts[1]};
    PyObject *sides[2] = {call->sides[0], call->sides[1]};
    if (load_texts(sides, counts, &loaded->points, &loaded->start) < 0) return -1;
    loaded->texts = (Texts){loaded->points, loaded->start, (size_t)call->counts[0], (size_t)call->counts[1], same};
    return 0;
}

static void drop_call(Loaded *loaded) {
    free(loaded->flagged.indices);
    free(loaded->points);
    free(loaded->start);
    *loaded = (Loaded){NULL, NULL, {NULL, NULL, 0, 0, 0}, {NULL, 0, 0}};
}

/* The work of one call (pairwise_scores or aggregate_scores), asking `pause` now and then: 0, 1 or -1 as they. */
typedef int (*Score)(const Texts *texts, const MbrCall *call, Flagged *flagged, Pause pause, void *context);

/* After work without the GIL: the flagged indices, or NULL with the exception (out of memory, or the pause's). */
static PyObject *flagged_or_error(int status, const Flagged *flagged) {
    if (status == 0) return flagged_list(flagged);
    if (status < 0) PyErr_NoMemory(); /* else the signal handler's exception is set */
    return NULL;
}

/* Load the texts, run `score` without the GIL (Ctrl-C looked for between chunks of rows), and return the indices it
   flagged; NULL with an exception set. */
static PyObject *scored(MbrCall *call, Score score) {
    PyObject *result = NULL;
    Loaded loaded = {NULL, NULL, {NULL, NULL, 0, 0, 0}, {NULL, 0, 0}};
    if (load_call(call, &loaded) == 0) {
        Released released = {NULL};
        released.state = PyEval_SaveThread();
        const int status = score(&loaded.texts, call, &loaded.flagged, pause_for_signals, &released);
        PyEval_RestoreThread(released.state);
        result = flagged_or_error(status, &loaded.flagged);
    }
    drop_call(&loaded);
    return result;
}

static int run_pairwise(const Texts *texts, const MbrCall *call, Flagged *flagged, Pause pause, void *context) {
    return pairwise_scores(texts, &call->scoring, call->threads, call->scores, flagged, pause, context);
}

static int run_aggregate(const Texts *texts, const MbrCall *call, Flagged *flagged, Pause pause, void *context) {
    return aggregate_scores(texts, &call->scoring, call->weights, call->threads, call->scores, call->counts_out,
                            flagged, pause, context);
}

const char pairwise_doc[] =
    "pairwise(hypotheses, references, char_order, word_order, include_whitespace, beta, per_order_f,\n"
    "         tolerance_bits, threads, out)\n--\n\n"
    "Every hypothesis against every reference into out, a writable C-contiguous buffer of\n"
    "len(hypotheses) x len(references) native doubles (row-major), each the score rounded to the nearest\n"
    "double. Returns the list of the flat indices whose rounding could not be decided within\n"
    "2^-tolerance_bits of the value, to be computed exactly. Texts must already be lowercased if the\n"
    "settings ask for it. Runs on `threads` threads without the GIL; Ctrl-C stops it within a chunk of rows.";

/* pairwise's output: `out`, a matrix of doubles, held in view[0] (-1 with an exception set). */
static int pairwise_output(MbrCall *call, PyObject *out, Py_buffer view[2]) {
    const size_t rows = (size_t)call->counts[0], columns = (size_t)call->counts[1];
    if (columns && rows > ((size_t)PY_SSIZE_T_MAX / sizeof(double)) / columns) {
        PyErr_SetString(PyExc_ValueError, "too many texts");
        return -1;
    }
    if (output(out, &view[0], rows * columns * sizeof(double), "out") < 0) return -1;
    call->scores = (double *)view[0].buf;
    return 0;
}

PyObject *pairwise(PyObject *module, PyObject *args) {
    (void)module;
    MbrCall call;
    PyObject *out;
    int char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits;
    if (!PyArg_ParseTuple(args, "OOiipipiiO:pairwise", &call.sides[0], &call.sides[1], &char_order, &word_order,
                          &keep_whitespace, &beta, &per_order_f, &tolerance_bits, &call.threads, &out) ||
        mbr_settings(&call, char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits) < 0)
        return NULL;
    Py_buffer view[2];
    if (pairwise_output(&call, out, view) < 0) return NULL;
    PyObject *result = scored(&call, run_pairwise);
    PyBuffer_Release(&view[0]);
    return result;
}

/* aggregate's outputs: scores (a double per hypothesis) and counts (orders x 3 int64s per hypothesis), held in
   view[0] and view[1], no weights (-1 with an exception set). */
static int aggregate_output(MbrCall *call, PyObject *scores_out, PyObject *counts_out, Py_buffer view[2]) {
    const size_t rows = (size_t)call->counts[0];
    const size_t orders = (size_t)(call->scoring.char_order + call->scoring.word_order);
    if (call->counts[1] == 0) {
        PyErr_SetString(PyExc_ValueError, "at least one reference");
        return -1;
    }
    if (output(scores_out, &view[0], rows * sizeof(double), "scores") < 0) return -1;
    if (output(counts_out, &view[1], rows * orders * 3 * sizeof(int64_t), "counts") < 0) {
        PyBuffer_Release(&view[0]);
        return -1;
    }
    call->scores = (double *)view[0].buf;
    call->counts_out = (int64_t *)view[1].buf;
    call->weights = NULL;
    return 0;
}

const char aggregate_doc[] =
    "aggregate(hypotheses, references, char_order, word_order, include_whitespace, beta, per_order_f,\n"
    "          tolerance_bits, threads, scores, counts, weights)\n--\n\n"
    "Each hypothesis against the references' summed n-gram counts into scores (len(hypotheses) native\n"
    "doubles) and counts (len(hypotheses) x orders x 3 native int64s: R x hypothesis n-grams, the\n"
    "references' n-grams, matches). weights: None, or one weight per reference as double-double\n"
    "(hi, lo) pairs of native doubles, positive or 0; then the counts are weighted and only the scores\n"
    "are filled. Returns the indices whose rounding could not be decided, as pairwise.";

PyObject *aggregate(PyObject *module, PyObject *args) {
    (void)module;
    MbrCall call;
    PyObject *scores_out, *counts_out, *weights_in;
    int char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits;
    if (!PyArg_ParseTuple(args, "OOiipipiiOOO:aggregate", &call.sides[0], &call.sides[1], &char_order, &word_order,
                          &keep_whitespace, &beta, &per_order_f, &tolerance_bits, &call.threads, &scores_out,
                          &counts_out, &weights_in) ||
        mbr_settings(&call, char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits) < 0)
        return NULL;
    Py_buffer view[2];
    if (aggregate_output(&call, scores_out, counts_out, view) < 0) return NULL;
    Py_buffer weights = {0};
    if (weights_in != Py_None) {
        if (PyObject_GetBuffer(weights_in, &weights, PyBUF_SIMPLE) < 0) goto released;
        if ((size_t)weights.len != (size_t)call.counts[1] * sizeof(Double2)) {
            PyErr_SetString(PyExc_ValueError, "weights: one (hi, lo) pair of doubles per reference");
            goto released;
        }
        call.weights = (const Double2 *)weights.buf;
        for (Py_ssize_t j = 0; j < call.counts[1]; j++) {
            if (!(call.weights[j].hi >= 0 && call.weights[j].hi <= 1.0)) { /* normalized: NaN fails too */
                PyErr_SetString(PyExc_ValueError, "weights: each from 0 to 1");
                goto released;
            }
        }
    }
    PyObject *result = scored(&call, run_aggregate);
    PyBuffer_Release(&view[0]);
    PyBuffer_Release(&view[1]);
    if (weights.obj != NULL) PyBuffer_Release(&weights);
    return result;
released:
    PyBuffer_Release(&view[0]);
    PyBuffer_Release(&view[1]);
    if (weights.obj != NULL) PyBuffer_Release(&weights);
    return NULL;
}

/* ---- batches: many sets in one call, each set a call of its own, the sets spread over the pool ---- */

#define BATCH_POINTS ((size_t)1 << 20) /* code points copied out at a time (4 MB): a batch is loaded in blocks */

/* The sets of one block: their calls and texts, scored by `score`, each whole on one thread. */
typedef struct {
    MbrCall *calls;
    Loaded *loaded;
    Score score;
} Block;

static int run_set(void *shared, size_t job, Pause pause, void *context) {
    Block *block = shared;
    return block->score(&block->loaded[job].texts, &block->calls[job], &block->loaded[job].flagged, pause, context);
}

/* Score the sets [begin, end) (loaded) on `threads` threads without the GIL, the threads left over shared among
   the sets' own rows. 0; 1 when stopped (the exception set); -1 when out of memory. */
static int score_block(MbrCall *calls, Loaded *loaded, size_t begin, size_t end, int threads, Score score) {
    const int inner = (size_t)threads >= 2 * (end - begin) ? threads / (int)(end - begin) : 1;
    for (size_t k = begin; k < end; k++) calls[k].threads = inner;
    Block block = {calls + begin, loaded + begin, score};
    Released released = {NULL};
    released.state = PyEval_SaveThread();
    const int status = parallel_jobs(end - begin, threads, run_set, &block, pause_for_signals, &released);
    PyEval_RestoreThread(released.state);
    return status;
}

/* Each set's texts and output(s), checked as the single call checks them, then the sets loaded and scored a block
   at a time; the list of each set's flagged indices. */
PyObject *batch(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *hypothesis_sets, *reference_sets, *outs, *result = NULL;
    int aggregating, char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits, threads;
    if (!PyArg_ParseTuple(args, "pOOiipipiiO:batch", &aggregating, &hypothesis_sets, &reference_sets, &char_order,
                          &word_order, &keep_whitespace, &beta, &per_order_f, &tolerance_bits, &threads, &outs))
        return NULL;
    const Py_ssize_t sets = PySequence_Size(hypothesis_sets);
    if (sets < 0) return NULL;
    if (PySequence_Size(reference_sets) != sets || PySequence_Size(outs) != sets) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "one reference set and one output per set");
        return NULL;
    }
    const size_t count = (size_t)sets;
    MbrCall *calls = calloc(count + 1, sizeof(MbrCall));
    Loaded *loaded = calloc(count + 1, sizeof(Loaded));
    Py_buffer *views = calloc(2 * count + 1, sizeof(Py_buffer));
    PyObject **held = calloc(4 * count + 1, sizeof(PyObject *)); /* each set's texts and output(s) */
    size_t ready = 0;                                              /* sets whose outputs are held */
    if (calls == NULL || loaded == NULL || views == NULL || held == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; ready < count; ready++) {
        MbrCall *call = &calls[ready];
        PyObject **own = held + 4 * ready;
        if ((own[0] = PySequence_GetItem(hypothesis_sets, (Py_ssize_t)ready)) == NULL ||
            (own[1] = PySequence_GetItem(reference_sets, (Py_ssize_t)ready)) == NULL ||
            (own[2] = PySequence_GetItem(outs, (Py_ssize_t)ready)) == NULL)
            goto done;
        call->sides[0] = own[0];
        call->sides[1] = own[1];
        call->threads = threads;
        if (mbr_settings(call, char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits) < 0)
            goto done;
        if (aggregating) {
            if ((own[3] = PySequence_GetItem(own[2], 0)) == NULL) goto done;
            PyObject *counts_out = PySequence_GetItem(own[2], 1);
            if (counts_out == NULL) goto done;
            const int failed = aggregate_output(call, own[3], counts_out, views + 2 * ready);
            Py_DECREF(counts_out);
            if (failed < 0) goto done;
        } else if (pairwise_output(call, own[2], views + 2 * ready) < 0) {
            goto done;
        }
    }
    if ((result = PyList_New(sets)) == NULL) goto done;
    for (size_t begin = 0, end = 0; begin < count; begin = end) {
        for (size_t points = 0; end < count && (end == begin || points < BATCH_POINTS); end++) {
            if (load_call(&calls[end], &loaded[end]) < 0) goto failed;
            points += loaded[end].texts.start[loaded[end].texts.rows + (loaded[end].texts.same ? 0
                                                                             : loaded[end].texts.columns)];
        }
        const int status = score_block(calls, loaded, begin, end, threads, aggregating ? run_aggregate : run_pairwise);
        if (status != 0) {
            flagged_or_error(status, NULL);
            goto failed;
        }
        for (size_t k = begin; k < end; k++) {
            PyObject *flagged = flagged_list(&loaded[k].flagged);
            if (flagged == NULL) goto failed;
            PyList_SetItem(result, (Py_ssize_t)k, flagged);
            drop_call(&loaded[k]);
        }
    }
    goto done;
failed:
    Py_CLEAR(result);
done:
    for (size_t k = 0; loaded != NULL && k < count; k++) drop_call(&loaded[k]);
    for (size_t k = 0; views != NULL && k < ready; k++) {
        PyBuffer_Release(&views[2 * k]);
        if (aggregating) PyBuffer_Release(&views[2 * k + 1]);
    }
    for (size_t k = 0; held != NULL && k < 4 * count; k++) Py_XDECREF(held[k]);
    free(calls);
    free(loaded);
    free(views);
    free(held);
    return result;
}

const char batch_doc[] =
    "batch(aggregating, hypothesis_sets, reference_sets, char_order, word_order, include_whitespace, beta,\n"
    "      per_order_f, tolerance_bits, threads, outs)\n--\n\n"
    "pairwise for every set (outs: one output matrix per set), or with aggregating, aggregate unweighted (outs:\n"
    "one (scores, counts) pair per set); the sets spread over `threads` threads of the kernel's pool without the\n"
    "GIL, a block of sets at a time. Returns each set's flagged indices. Ctrl-C stops every set in flight within\n"
    "a chunk of rows.";
