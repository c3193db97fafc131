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

/* Calls cancelled so far (cancel()): read and changed with the GIL held only. */
static unsigned long cancellations;

/* One MBR call without the GIL: its thread state meanwhile, and the cancellations when it began. */
typedef struct {
    PyThreadState *state;
    unsigned long began;
} Released;

/* While pairwise runs without the GIL: take it back for a moment to see whether Ctrl-C was pressed (the main thread
   alone sees signals) or the call was cancelled (any thread: a batch's other threads, when Ctrl-C stopped it). */
static int pause_for_signals(void *context) {
    Released *released = context;
    PyEval_RestoreThread(released->state);
    int stop = PyErr_CheckSignals() < 0;
    if (!stop && released->began != cancellations) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        stop = 1;
    }
    released->state = PyEval_SaveThread();
    return stop;
}

const char cancel_doc[] =
    "cancel()\n--\n\n"
    "Stop every pairwise and aggregate call running now, on any thread, within a chunk of rows: each raises\n"
    "KeyboardInterrupt (a batch spread over threads calls it when Ctrl-C stops the calling thread).";

PyObject *cancel(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    cancellations++;
    Py_RETURN_NONE;
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

/* Load the texts, run `score` without the GIL (Ctrl-C looked for between chunks of rows), and return the indices it
   flagged; NULL with an exception set. */
static PyObject *scored(MbrCall *call, int (*score)(const Texts *, const MbrCall *, Flagged *, Released *)) {
    PyObject *result = NULL;
    uint32_t *points = NULL;
    size_t *start = NULL;
    Flagged flagged = {NULL, 0, 0};
    const int same = call->sides[0] == call->sides[1]; /* the samples as their own references: read once */
    Py_ssize_t loaded[2] = {call->counts[0], same ? 0 : call->counts[1]};
    if (load_texts(call->sides, loaded, &points, &start) == 0) {
        Texts texts = {points, start, (size_t)call->counts[0], (size_t)call->counts[1], same};
        Released released = {NULL, cancellations};
        released.state = PyEval_SaveThread();
        int status = score(&texts, call, &flagged, &released);
        PyEval_RestoreThread(released.state);
        if (status == 0) result = flagged_list(&flagged);
        else if (status < 0) PyErr_NoMemory(); /* else the signal handler's exception is set */
    }
    free(flagged.indices);
    free(points);
    free(start);
    return result;
}

static int run_pairwise(const Texts *texts, const MbrCall *call, Flagged *flagged, Released *released) {
    return pairwise_scores(texts, &call->scoring, call->threads, call->scores, flagged, pause_for_signals, released);
}

static int run_aggregate(const Texts *texts, const MbrCall *call, Flagged *flagged, Released *released) {
    return aggregate_scores(texts, &call->scoring, call->weights, call->threads, call->scores, call->counts_out,
                            flagged, pause_for_signals, released);
}

const char pairwise_doc[] =
    "pairwise(hypotheses, references, char_order, word_order, include_whitespace, beta, per_order_f,\n"
    "         tolerance_bits, threads, out)\n--\n\n"
    "Every hypothesis against every reference into out, a writable C-contiguous buffer of\n"
    "len(hypotheses) x len(references) native doubles (row-major), each the score rounded to the nearest\n"
    "double. Returns the list of the flat indices whose rounding could not be decided within\n"
    "2^-tolerance_bits of the value, to be computed exactly. Texts must already be lowercased if the\n"
    "settings ask for it. Runs on `threads` threads without the GIL; Ctrl-C stops it within a chunk of rows.";

PyObject *pairwise(PyObject *module, PyObject *args) {
    (void)module;
    MbrCall call;
    PyObject *out;
    int char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits;
    if (!PyArg_ParseTuple(args, "OOiipipiiO:pairwise", &call.sides[0], &call.sides[1], &char_order, &word_order,
                          &keep_whitespace, &beta, &per_order_f, &tolerance_bits, &call.threads, &out) ||
        mbr_settings(&call, char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits) < 0)
        return NULL;
    const size_t rows = (size_t)call.counts[0], columns = (size_t)call.counts[1];
    if (columns && rows > ((size_t)PY_SSIZE_T_MAX / sizeof(double)) / columns) {
        PyErr_SetString(PyExc_ValueError, "too many texts");
        return NULL;
    }
    Py_buffer view;
    if (output(out, &view, rows * columns * sizeof(double), "out") < 0) return NULL;
    call.scores = (double *)view.buf;
    PyObject *result = scored(&call, run_pairwise);
    PyBuffer_Release(&view);
    return result;
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
    const size_t rows = (size_t)call.counts[0], orders = (size_t)(char_order + word_order);
    if (call.counts[1] == 0) {
        PyErr_SetString(PyExc_ValueError, "at least one reference");
        return NULL;
    }
    Py_buffer scores, counts;
    if (output(scores_out, &scores, rows * sizeof(double), "scores") < 0) return NULL;
    if (output(counts_out, &counts, rows * orders * 3 * sizeof(int64_t), "counts") < 0) {
        PyBuffer_Release(&scores);
        return NULL;
    }
    call.scores = (double *)scores.buf;
    call.counts_out = (int64_t *)counts.buf;
    call.weights = NULL;
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
    PyBuffer_Release(&scores);
    PyBuffer_Release(&counts);
    if (weights.obj != NULL) PyBuffer_Release(&weights);
    return result;
released:
    PyBuffer_Release(&scores);
    PyBuffer_Release(&counts);
    if (weights.obj != NULL) PyBuffer_Release(&weights);
    return NULL;
}

