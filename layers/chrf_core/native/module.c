/*
 * The CPython module chrf_core._kernel: arguments in, texts copied out as code points, counts and scores back.
 * CPython Limited API 3.11 (one _kernel.abi3.so for every Python from 3.11 on); the counting itself is in
 * counting.c (with tables.c; systems.c for several systems against one reference) and, for minimum Bayes risk
 * decoding, pairwise.c and aggregate.c (with corpus.c and scores.c), which know nothing of Python.
 */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"
#include "mbr.h"

#define POLL_POINTS (1u << 20)      /* code points counted between two looks for a pending signal */
#define POLL_TEXTS 0xFFFFu           /* texts read between two looks for a pending signal, less one */
#define KEEP_POSITIONS (1u << 19)   /* buffers kept between calls up to this many positions, else given back */

/* Kept between calls (the GIL serialises them), so repeated requests reuse warm memory instead of allocating and
   clearing tables each time. */
static Work shared_work;
static int shared_work_busy = 0;

/* Nonzero when a signal handler raised (Ctrl-C: KeyboardInterrupt), which then stays set. */
static int signalled(void *context) {
    (void)context;
    return PyErr_CheckSignals() < 0;
}

/* The shared buffers, or when a call is already using them (a sequence whose __getitem__ runs Python code could
   call back in), `own`, emptied, for this call alone. */
static Work *acquire_work(Work *own) {
    Work *work = own;
    if (!shared_work_busy) {
        shared_work_busy = 1;
        work = &shared_work;
    } else {
        memset(own, 0, sizeof *own);
    }
    work->interrupted = signalled;
    return work;
}

static void release_work(Work *work) {
    if (work == &shared_work) {
        shared_work_busy = 0;
        if (work->positions > KEEP_POSITIONS) work_release(work);
    } else {
        work_release(work);
    }
}

/* The code points of segment `index` of `count` sequences into work->raw, one text after another; their lengths.
   Classes come from the reference (sequences[0]) with `from_reference`, else from the shorter of two sides. `held`
   has room for `count` texts. -1 with an exception set. */
static int load_segment(Work *work, PyObject *const *sequences, const char *const *names, size_t count,
                        Py_ssize_t index, int words, int from_reference, PyObject **held, size_t *lengths) {
    int status = -1;
    size_t total = 0, loaded = 0;
    for (; loaded < count; loaded++) {
        PyObject *text = held[loaded] = PySequence_GetItem(sequences[loaded], index);
        if (text == NULL) goto done;
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] must be a str", names[loaded], index);
            loaded++;
            goto done;
        }
        const Py_ssize_t size = PyUnicode_GetLength(text);
        if (size < 0) {
            loaded++;
            goto done;
        }
        if ((size_t)size > MAX_LENGTH) {
            PyErr_Format(PyExc_ValueError, "%s[%zd] is too long for the native kernel", names[loaded], index);
            loaded++;
            goto done;
        }
        lengths[loaded] = (size_t)size;
        total += (size_t)size;
    }
    const size_t classes = from_reference || lengths[0] < lengths[1] ? lengths[0] : lengths[1];
    if (work_reserve(work, total, count, classes, words) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    size_t at = 0;
    for (size_t k = 0; k < count; k++) {
        if (lengths[k] > 0 && PyUnicode_AsUCS4(held[k], (Py_UCS4 *)work->raw + at, (Py_ssize_t)lengths[k], 0) == NULL)
            goto done;
        at += lengths[k];
    }
    status = 0;
done:
    for (size_t k = 0; k < loaded; k++) Py_XDECREF(held[k]);
    return status;
}

PyDoc_STRVAR(count_doc,
             "count(hypotheses, references, char_order, word_order, include_whitespace, per_segment)\n--\n\n"
             "Per-order (hypothesis n-grams, reference n-grams, clipped matches), character orders first.\n"
             "Texts must already be lowercased if the settings ask for it. Returns a tuple of (h, r, m) tuples\n"
             "summed over segments, or with per_segment true, bytes of native int64 values: one row of\n"
             "3 * (char_order + word_order) values per segment. Ctrl-C stops it within a second.");

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
    PyObject *const sides[2] = {hypotheses, references};
    const char *const side_names[2] = {"hypotheses", "references"};
    PyObject *held[2];
    Work own_work;
    Work *work = acquire_work(&own_work);
    int failed = 0;
    size_t unpolled = 0;
    for (Py_ssize_t index = 0; index < segments && !failed; index++) {
        size_t lengths[2];
        if (load_segment(work, sides, side_names, 2, index, word_order > 0, 0, held, lengths) < 0) {
            failed = 1;
            break;
        }
        if ((unpolled += lengths[0] + lengths[1] + 1) >= POLL_POINTS) {
            unpolled = 0;
            if (signalled(NULL)) {
                failed = 1;
                break;
            }
        }
        memset(segment, 0, row * sizeof(int64_t));
        if (count_segment(work, lengths[0], lengths[1], char_order, word_order, keep_whitespace, segment) < 0) {
            failed = 1;
            break;
        }
        if (per_segment) {
            memcpy(rows_data + row * (size_t)index, segment, row * sizeof(int64_t));
        } else {
            for (size_t k = 0; k < row; k++) totals[k] += segment[k];
        }
    }
    release_work(work);
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


PyDoc_STRVAR(count_systems_doc,
             "count_systems(systems, references, char_order, word_order, include_whitespace)\n--\n\n"
             "Each system's per-segment counts against the same references, each reference counted once per\n"
             "segment: bytes of native int64 values, one row of 3 * (char_order + word_order) values per\n"
             "segment, system after system. Texts must already be as counted. Ctrl-C stops it within a second.");

static PyObject *count_systems_of(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *systems, *references;
    int char_order, word_order, keep_whitespace;
    if (!PyArg_ParseTuple(args, "OOiip:count_systems", &systems, &references, &char_order, &word_order,
                          &keep_whitespace))
        return NULL;
    if (char_order < 0 || word_order < 0 || char_order + word_order > MAX_ORDERS) {
        PyErr_SetString(PyExc_ValueError, "orders out of range");
        return NULL;
    }
    const Py_ssize_t segments = PySequence_Size(references);
    if (segments < 0) return NULL;
    PyObject *listed = PySequence_Tuple(systems);
    if (listed == NULL) return NULL;
    const size_t texts = 1 + (size_t)PyTuple_Size(listed);
    const size_t row = 3 * (size_t)(char_order + word_order);
    PyObject *rows = NULL, **sequences = calloc(texts, sizeof(PyObject *)), **held = calloc(texts, sizeof(PyObject *));
    const char **names = calloc(texts, sizeof(char *));
    const uint32_t **units = calloc(texts, sizeof(uint32_t *));
    size_t *lengths = calloc(6 * texts, sizeof(size_t)); /* then the scratch of count_systems */
    if (sequences == NULL || held == NULL || names == NULL || units == NULL || lengths == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    sequences[0] = references;
    names[0] = "references";
    for (size_t k = 1; k < texts; k++) {
        sequences[k] = PyTuple_GetItem(listed, (Py_ssize_t)k - 1);
        names[k] = "hypotheses";
        const Py_ssize_t size = PySequence_Size(sequences[k]);
        if (size < 0) goto done;
        if (size != segments) {
            PyErr_SetString(PyExc_ValueError, "a system's hypotheses and the references differ in length");
            goto done;
        }
    }
    rows = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(row * (size_t)segments * (texts - 1) * sizeof(int64_t)));
    if (rows == NULL) goto done;
    int64_t *const rows_data = (int64_t *)PyBytes_AsString(rows);
    if (rows_data == NULL) goto done;
    Work own_work;
    Work *work = acquire_work(&own_work);
    int failed = 0;
    size_t unpolled = 0;
    for (Py_ssize_t index = 0; index < segments && !failed; index++) {
        if (load_segment(work, sequences, names, texts, index, word_order > 0, 1, held, lengths) < 0) {
            failed = 1;
            break;
        }
        for (size_t k = 0; k < texts; k++) unpolled += lengths[k] + 1;
        if (unpolled >= POLL_POINTS) {
            unpolled = 0;
            if (signalled(NULL)) {
                failed = 1;
                break;
            }
        }
        if (count_systems(work, lengths, texts, char_order, word_order, keep_whitespace, lengths + texts, units,
                          rows_data + row * (size_t)index, row * (size_t)segments) < 0)
            failed = 1;
    }
    release_work(work);
    if (failed) Py_CLEAR(rows);
done:
    Py_DECREF(listed);
    free(sequences);
    free(held);
    free(names);
    free(units);
    free(lengths);
    return rows;
}

/* Every text's code points, one after another (hypotheses, then references). -1 with an exception set. */
static int load_texts(PyObject *sides[2], Py_ssize_t counts[2], uint32_t **points, size_t **start) {
    const size_t texts = (size_t)counts[0] + (size_t)counts[1];
    *start = calloc(texts + 1, sizeof(size_t));
    if (*start == NULL) return PyErr_NoMemory(), -1;
    size_t total = 0;
    for (size_t t = 0; t < texts; t++) {
        if ((t & POLL_TEXTS) == POLL_TEXTS && signalled(NULL)) return -1;
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
    for (size_t t = 0; t < texts; t++) {
        if ((t & POLL_TEXTS) == POLL_TEXTS && signalled(NULL)) return -1;
        int side = t >= (size_t)counts[0];
        PyObject *text = PySequence_GetItem(sides[side], side ? (Py_ssize_t)t - counts[0] : (Py_ssize_t)t);
        if (text == NULL) return -1;
        size_t length = (*start)[t + 1] - (*start)[t];
        int failed = !PyUnicode_Check(text) || (Py_ssize_t)length != PyUnicode_GetLength(text) ||
                     (length && PyUnicode_AsUCS4(text, (Py_UCS4 *)*points + (*start)[t], (Py_ssize_t)length, 0) == NULL);
        Py_DECREF(text);
        if (failed) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "a text changed while being read");
            return -1;
        }
    }
    return 0;
}

/* While pairwise runs without the GIL: take it back for a moment to see whether Ctrl-C was pressed. */
static int pause_for_signals(void *context) {
    PyThreadState **state = context;
    PyEval_RestoreThread(*state);
    int stop = PyErr_CheckSignals() < 0;
    *state = PyEval_SaveThread();
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

/* Load the texts, run `score` without the GIL (Ctrl-C looked for between chunks of rows), and return the indices it
   flagged; NULL with an exception set. */
static PyObject *scored(MbrCall *call, int (*score)(const Texts *, const MbrCall *, Flagged *, PyThreadState **)) {
    PyObject *result = NULL;
    uint32_t *points = NULL;
    size_t *start = NULL;
    Flagged flagged = {NULL, 0, 0};
    if (load_texts(call->sides, call->counts, &points, &start) == 0) {
        Texts texts = {points, start, (size_t)call->counts[0], (size_t)call->counts[1]};
        PyThreadState *state = PyEval_SaveThread();
        int status = score(&texts, call, &flagged, &state);
        PyEval_RestoreThread(state);
        if (status == 0) result = flagged_list(&flagged);
        else if (status < 0) PyErr_NoMemory(); /* else the signal handler's exception is set */
    }
    free(flagged.indices);
    free(points);
    free(start);
    return result;
}

static int run_pairwise(const Texts *texts, const MbrCall *call, Flagged *flagged, PyThreadState **state) {
    return pairwise_scores(texts, &call->scoring, call->threads, call->scores, flagged, pause_for_signals, state);
}

static int run_aggregate(const Texts *texts, const MbrCall *call, Flagged *flagged, PyThreadState **state) {
    return aggregate_scores(texts, &call->scoring, call->weights, call->threads, call->scores, call->counts_out,
                            flagged, pause_for_signals, state);
}

PyDoc_STRVAR(pairwise_doc,
             "pairwise(hypotheses, references, char_order, word_order, include_whitespace, beta, per_order_f,\n"
             "         tolerance_bits, threads, out)\n--\n\n"
             "Every hypothesis against every reference into out, a writable C-contiguous buffer of\n"
             "len(hypotheses) x len(references) native doubles (row-major), each the score rounded to the nearest\n"
             "double. Returns the list of the flat indices whose rounding could not be decided within\n"
             "2^-tolerance_bits of the value, to be computed exactly. Texts must already be lowercased if the\n"
             "settings ask for it. Runs on `threads` threads without the GIL; Ctrl-C stops it within a chunk of rows.");

static PyObject *pairwise(PyObject *module, PyObject *args) {
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

PyDoc_STRVAR(aggregate_doc,
             "aggregate(hypotheses, references, char_order, word_order, include_whitespace, beta, per_order_f,\n"
             "          tolerance_bits, threads, scores, counts, weights)\n--\n\n"
             "Each hypothesis against the references' summed n-gram counts into scores (len(hypotheses) native\n"
             "doubles) and counts (len(hypotheses) x orders x 3 native int64s: R x hypothesis n-grams, the\n"
             "references' n-grams, matches). weights: None, or one weight per reference as double-double\n"
             "(hi, lo) pairs of native doubles, positive or 0; then the counts are weighted and only the scores\n"
             "are filled. Returns the indices whose rounding could not be decided, as pairwise.");

static PyObject *aggregate(PyObject *module, PyObject *args) {
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
    {"count_systems", count_systems_of, METH_VARARGS, count_systems_doc},
    {"pairwise", pairwise, METH_VARARGS, pairwise_doc},
    {"aggregate", aggregate, METH_VARARGS, aggregate_doc},
    {"set_seed", set_seed, METH_O, set_seed_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_kernel", "Native n-gram counting for chrf_core.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module_definition); }
