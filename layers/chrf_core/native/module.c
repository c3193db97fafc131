/*
 * The CPython module chrf_core._kernel: arguments in, texts copied out as code points, counts and scores back.
 * CPython Limited API 3.11 (one _kernel.abi3.so for every Python from 3.11 on); the counting itself is in
 * counting.c (with tables.c; systems.c for several systems against one reference) and, for minimum Bayes risk
 * decoding (module_mbr.c), pairwise.c and aggregate.c (with corpus.c and scores.c), which know nothing of Python.
 */
#include "module.h"

#include <stdlib.h>
#include <string.h>

#include "kernel.h"

#define KEEP_POSITIONS (1u << 19)   /* buffers kept between calls up to this many positions, else given back */

/* Kept between calls (the GIL serialises them), so repeated requests reuse warm memory instead of allocating and
   clearing tables each time. */
static Work shared_work;
static int shared_work_busy = 0;

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
    work->pause = signalled;
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
             "count(systems, references, char_order, word_order, include_whitespace, per_segment)\n--\n\n"
             "Per-order (hypothesis n-grams, reference n-grams, clipped matches), character orders first, of each\n"
             "system's hypotheses (a sequence of sequences of texts) against the same references, each reference\n"
             "counted once per segment. Texts must already be as counted. With per_segment, bytes of native int64\n"
             "values: one row of 3 * (char_order + word_order) values per segment, system after system; else a\n"
             "tuple of (h, r, m) tuples summed over segments and systems. Ctrl-C stops it within a second.");

/* One system is counted as a pair (count_segment: classes from the shorter side), several against their reference
   (count_systems: classes from the reference). */
static PyObject *count(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *systems, *references, *listed, *rows = NULL, *result = NULL;
    int char_order, word_order, keep_whitespace, per_segment, failed = 0;
    if (!PyArg_ParseTuple(args, "OOiipp:count", &systems, &references, &char_order, &word_order, &keep_whitespace,
                          &per_segment))
        return NULL;
    if (char_order < 0 || word_order < 0 || char_order + word_order > MAX_ORDERS) {
        PyErr_SetString(PyExc_ValueError, "orders out of range");
        return NULL;
    }
    const Py_ssize_t segments = PySequence_Size(references);
    if (segments < 0 || (listed = PySequence_Tuple(systems)) == NULL) return NULL;
    const size_t texts = 1 + (size_t)PyTuple_Size(listed), row = 3 * (size_t)(char_order + word_order);
    const int pair = texts == 2; /* the texts in the order their driver reads them: hypothesis then reference */
    PyObject **sequences = calloc(texts, sizeof(PyObject *)), **held = calloc(texts, sizeof(PyObject *));
    const char **names = calloc(texts, sizeof(char *));
    const uint32_t **units = calloc(texts, sizeof(uint32_t *));
    size_t *lengths = calloc(6 * texts, sizeof(size_t)); /* then the scratch of count_systems */
    int64_t *summed = calloc(row * texts + 1, sizeof(int64_t)); /* a segment's rows, then their sums */
    if (sequences == NULL || held == NULL || names == NULL || units == NULL || lengths == NULL || summed == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    sequences[pair] = references;
    names[pair] = "references";
    for (size_t k = 1; k < texts; k++) {
        sequences[pair ? 0 : k] = PyTuple_GetItem(listed, (Py_ssize_t)k - 1);
        names[pair ? 0 : k] = "hypotheses";
        const Py_ssize_t size = PySequence_Size(sequences[pair ? 0 : k]);
        if (size < 0) goto done;
        if (size != segments) {
            PyErr_SetString(PyExc_ValueError, "a system's hypotheses and the references differ in length");
            goto done;
        }
    }
    int64_t *const sums = summed + row * (texts - 1);
    int64_t *rows_data = summed;
    if (per_segment) {
        rows = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(row * (size_t)segments * (texts - 1) * sizeof(int64_t)));
        if (rows == NULL || (rows_data = (int64_t *)PyBytes_AsString(rows)) == NULL) goto done;
    }
    Work own_work;
    Work *work = acquire_work(&own_work);
    size_t read = 0, next_pause = POLL_MASK + 1; /* code points read */
    for (Py_ssize_t index = 0; index < segments && !failed; index++) {
        if (load_segment(work, sequences, names, texts, index, word_order > 0, !pair, held, lengths) < 0) {
            failed = 1;
            break;
        }
        for (size_t k = 0; k < texts; k++) read += lengths[k] + 1;
        if (pause_now(read, &next_pause, signalled, NULL)) {
            failed = 1;
            break;
        }
        int64_t *out = per_segment ? rows_data + row * (size_t)index : summed;
        if (pair) {
            memset(out, 0, row * sizeof(int64_t));
            failed = count_segment(work, lengths[0], lengths[1], char_order, word_order, keep_whitespace, out) != 0;
        } else {
            failed = count_systems(work, lengths, texts, char_order, word_order, keep_whitespace, lengths + texts,
                                   units, out, per_segment ? row * (size_t)segments : row) != 0;
        }
        for (size_t k = 0; !per_segment && k < row * (texts - 1); k++) sums[k % row] += summed[k];
    }
    release_work(work);
    if (failed || per_segment) {
        if (!failed) result = rows, rows = NULL;
        goto done;
    }
    result = PyTuple_New(char_order + word_order);
    for (int n = 0; result != NULL && n < char_order + word_order; n++) {
        PyObject *triple = Py_BuildValue("(LLL)", (long long)sums[3 * n], (long long)sums[3 * n + 1],
                                         (long long)sums[3 * n + 2]);
        if (triple == NULL) Py_CLEAR(result);
        else PyTuple_SetItem(result, n, triple);
    }
done:
    Py_XDECREF(rows);
    Py_DECREF(listed);
    free(sequences);
    free(held);
    free(names);
    free(units);
    free(lengths);
    free(summed);
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
    {"batch", batch, METH_VARARGS, batch_doc},
    {"buffers", buffers, METH_NOARGS, buffers_doc},
    {"buffers_held", buffers_held, METH_O, buffers_held_doc},
    {"set_seed", set_seed, METH_O, set_seed_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_kernel", "Native n-gram counting for chrf_core.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module_definition); }
