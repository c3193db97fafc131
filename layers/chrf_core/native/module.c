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
    size_t read = 0, next_pause = POLL_MASK + 1; /* code points read */
    for (Py_ssize_t index = 0; index < segments && !failed; index++) {
        size_t lengths[2];
        if (load_segment(work, sides, side_names, 2, index, word_order > 0, 0, held, lengths) < 0) {
            failed = 1;
            break;
        }
        if (pause_now(read += lengths[0] + lengths[1] + 1, &next_pause, signalled, NULL)) {
            failed = 1;
            break;
        }
        memset(segment, 0, row * sizeof(int64_t));
        if (count_segment(work, lengths[0], lengths[1], char_order, word_order, keep_whitespace, segment) != 0) {
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
    size_t read = 0, next_pause = POLL_MASK + 1; /* code points read */
    for (Py_ssize_t index = 0; index < segments && !failed; index++) {
        if (load_segment(work, sequences, names, texts, index, word_order > 0, 1, held, lengths) < 0) {
            failed = 1;
            break;
        }
        for (size_t k = 0; k < texts; k++) read += lengths[k] + 1;
        if (pause_now(read, &next_pause, signalled, NULL)) {
            failed = 1;
            break;
        }
        if (count_systems(work, lengths, texts, char_order, word_order, keep_whitespace, lengths + texts, units,
                          rows_data + row * (size_t)index, row * (size_t)segments) != 0)
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
    {"batch", batch, METH_VARARGS, batch_doc},
    {"set_seed", set_seed, METH_O, set_seed_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_kernel", "Native n-gram counting for chrf_core.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module_definition); }
