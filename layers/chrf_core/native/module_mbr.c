/*
 * The minimum Bayes risk entry point of chrf_core._kernel (batch: sets of texts, pairwise or aggregate): every
 * text's code points copied out once, the work done by pairwise.c and aggregate.c without the GIL on the kernel's
 * pool, the undecided indices handed back.
 */
#include "module.h"

#include <stdlib.h>
#include <string.h>

#include "mbr.h"

/* Every text's code points, one after another (hypotheses, then references): each text read once and held while
   the lengths are summed, then copied out into room of exactly their size (from `keep`). -1 with an exception set
   (what it took given back). */
static int load_texts(PyObject *sides[2], Py_ssize_t counts[2], uint32_t **points, size_t **start, Keep *keep) {
    const size_t texts = (size_t)counts[0] + (size_t)counts[1];
    PyObject **held = keep_alloc(keep, (texts + 1) * sizeof(PyObject *), 1);
    size_t read = 0, next_pause = POLL_MASK + 1;
    int status = -1;
    if (held == NULL || (*start = keep_alloc(keep, (texts + 1) * sizeof(size_t), 1)) == NULL) goto done;
    for (; read < texts; read++) {
        if (pause_now(read + (*start)[read], &next_pause, signalled, NULL)) goto done; /* texts and points read */
        const int side = read >= (size_t)counts[0];
        const Py_ssize_t index = side ? (Py_ssize_t)read - counts[0] : (Py_ssize_t)read;
        PyObject *text = held[read] = PySequence_GetItem(sides[side], index);
        const Py_ssize_t length = text != NULL && PyUnicode_Check(text) ? PyUnicode_GetLength(text) : -1;
        if (length < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s[%zd] must be a str", side ? "references" : "hypotheses", index);
            goto done;
        }
        if (((*start)[read + 1] = (*start)[read] + (size_t)length) > MAX_LENGTH) {
            PyErr_SetString(PyExc_ValueError, "the texts are too long together for the native kernel");
            goto done;
        }
    }
    if ((*points = keep_alloc(keep, ((*start)[texts] ? (*start)[texts] : 1) * sizeof(uint32_t), 0)) == NULL)
        goto done;
    for (size_t t = 0; t < texts; t++) {
        const Py_ssize_t length = (Py_ssize_t)((*start)[t + 1] - (*start)[t]);
        if (length > 0 && PyUnicode_AsUCS4(held[t], (Py_UCS4 *)*points + (*start)[t], length, 0) == NULL) goto done;
    }
    status = 0;
done:
    if (status < 0 && !PyErr_Occurred()) PyErr_NoMemory();
    for (size_t t = 0; held != NULL && t <= read && t < texts; t++) Py_XDECREF(held[t]);
    keep_free(keep, held, (texts + 1) * sizeof(PyObject *));
    if (status < 0 && *start != NULL) {
        if (*points != NULL) keep_free(keep, *points, ((*start)[texts] ? (*start)[texts] : 1) * sizeof(uint32_t));
        keep_free(keep, *start, (texts + 1) * sizeof(size_t));
        *points = NULL;
        *start = NULL;
    }
    return status;
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

/* One set of a batch: its texts, the settings, its threads and its output buffer(s). */
typedef struct {
    PyObject *sides[2];
    Py_ssize_t counts[2];
    Scoring scoring;
    int threads;
    double *scores;
    int64_t *counts_out;
    const Double2 *weights; /* aggregate: one per reference, or NULL */
    ExactCounts exact;      /* aggregate with weights: their exact values (or weights NULL), the exact counts */
} MbrCall;

/* The kernel's own bounds, not the contract's ranges (CHRF checks those): orders its buffers hold, a beta whose
   square keeps every product of counts exact in a double, a tolerance a double-double can resolve. Read once a
   call, for every set. */
static int mbr_scoring(Scoring *scoring, int char_order, int word_order, int keep_whitespace, int beta,
                       int per_order_f, int tolerance_bits, int threads) {
    if (char_order < 0 || word_order < 0 || char_order + word_order > MAX_ORDERS || char_order + word_order == 0 ||
        beta < 1 || beta > 1000 || tolerance_bits < 1 || tolerance_bits > 100 || threads < 1 ||
        threads > MAX_THREADS) {
        PyErr_SetString(PyExc_ValueError, "settings out of range");
        return -1;
    }
    *scoring = (Scoring){char_order, word_order, keep_whitespace, per_order_f, (double)beta * beta, 1.0};
    for (int k = 0; k < tolerance_bits; k++) scoring->tolerance /= 2;
    return 0;
}

/* A set's numbers of hypotheses and references, within the kernel's 32-bit indices. -1 with an exception set. */
static int set_sizes(MbrCall *call) {
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

/* A set's flagged indices with their exact counts (the list, bytes of 3 x orders integers of `width` words each per
   index, width); the list taken over. NULL with an exception set. */
static PyObject *with_exact_counts(PyObject *flagged, MbrCall *call) {
    const size_t orders = (size_t)(call->scoring.char_order + call->scoring.word_order);
    const size_t size = call->exact.count * 3 * orders * (size_t)call->exact.width * sizeof(uint32_t);
    PyObject *counts = PyBytes_FromStringAndSize(call->exact.count ? (const char *)call->exact.counts : "",
                                                 (Py_ssize_t)size);
    free(call->exact.counts);
    call->exact.counts = NULL;
    PyObject *result = counts == NULL ? NULL : Py_BuildValue("(OOi)", flagged, counts, call->exact.width);
    Py_DECREF(flagged);
    Py_XDECREF(counts);
    return result;
}

/* One call's texts, its code points copied out (load_texts) and what it flagged; freed by drop_call. */
typedef struct {
    uint32_t *points;
    size_t *start, count; /* count: the texts copied out */
    Texts texts;
    Flagged flagged;
} Loaded;

static int load_call(const MbrCall *call, Loaded *loaded, Keep *keep) {
    const int same = call->sides[0] == call->sides[1]; /* the samples as their own references: read once */
    Py_ssize_t counts[2] = {call->counts[0], same ? 0 : call->counts[1]};
    PyObject *sides[2] = {call->sides[0], call->sides[1]};
    if (load_texts(sides, counts, &loaded->points, &loaded->start, keep) < 0) return -1;
    loaded->count = (size_t)counts[0] + (size_t)counts[1];
    loaded->texts = (Texts){loaded->points, loaded->start, (size_t)call->counts[0], (size_t)call->counts[1], same};
    return 0;
}

static void drop_call(Loaded *loaded, Keep *keep) {
    free(loaded->flagged.indices);
    if (loaded->start != NULL) {
        const size_t points = loaded->start[loaded->count];
        keep_free(keep, loaded->points, (points ? points : 1) * sizeof(uint32_t));
        keep_free(keep, loaded->start, (loaded->count + 1) * sizeof(size_t));
    }
    *loaded = (Loaded){NULL, NULL, 0, {NULL, NULL, 0, 0, 0}, {NULL, 0, 0}};
}

/* ---- one entry point: many sets in one call, each set scored as alone, the sets spread over the pool ---- */

#define BATCH_POINTS ((size_t)1 << 20) /* code points copied out at a time (4 MB): a batch is loaded in blocks */

/* The sets of one block: their calls and texts, each whole on one thread, and where their buffers come from. */
typedef struct {
    MbrCall *calls;
    Loaded *loaded;
    int aggregating;
    Keep *keep;
} Block;

static int run_set(void *shared, size_t job, int worker, Pause pause, void *context) {
    (void)worker;
    const Block *block = shared;
    MbrCall *call = &block->calls[job];
    Loaded *loaded = &block->loaded[job];
    if (block->aggregating)
        return aggregate_scores(&loaded->texts, &call->scoring, call->weights,
                                call->exact.weights != NULL ? &call->exact : NULL, call->threads, call->scores,
                                call->counts_out, &loaded->flagged, block->keep, pause, context);
    return pairwise_scores(&loaded->texts, &call->scoring, call->threads, call->scores, &loaded->flagged, block->keep,
                           pause, context);
}

/* Score the sets [begin, end) (loaded) on `threads` threads without the GIL, the threads left over shared among
   the sets' own rows. 0; 1 when stopped (the exception set); -1 when out of memory (set here). */
static int score_block(MbrCall *calls, Loaded *loaded, size_t begin, size_t end, int threads, int aggregating,
                       Keep *keep) {
    const int inner = (size_t)threads >= 2 * (end - begin) ? threads / (int)(end - begin) : 1;
    for (size_t k = begin; k < end; k++) calls[k].threads = inner;
    Block block = {calls + begin, loaded + begin, aggregating, keep};
    Released released = {NULL};
    released.state = PyEval_SaveThread();
    const int status = parallel_jobs(end - begin, threads, run_set, &block, pause_for_signals, &released);
    PyEval_RestoreThread(released.state);
    if (status < 0) PyErr_NoMemory(); /* else, when stopped, the signal handler's exception is set */
    return status;
}

#define EXACT_WORDS (1 << 16) /* 32-bit words of an exact weight at most (2^21 bits) */

/* A set's output(s) held in view[0..3]: pairwise, `out` a matrix of doubles; aggregating, `out` a (scores, counts,
   weights[, exact weights]) tuple: a double per hypothesis, orders x 3 int64s per hypothesis, None or a (hi, lo)
   pair of doubles per reference, each from 0 to 1, and with weights, optionally, their exact values: the same
   number of 32-bit words (least significant first) per reference. -1 with an exception set, nothing held. */
static int set_output(MbrCall *call, PyObject *out, int aggregating, Py_buffer view[4]) {
    const size_t rows = (size_t)call->counts[0], columns = (size_t)call->counts[1];
    const size_t orders = (size_t)(call->scoring.char_order + call->scoring.word_order);
    PyObject *item[4] = {NULL, NULL, NULL, NULL}; /* aggregating: the tuple's items, held while checked */
    int status = -1, held = 0;
    call->weights = NULL;
    call->exact = (ExactCounts){NULL, 0, 0, NULL, 0};
    if (!aggregating) {
        if (columns && rows > ((size_t)PY_SSIZE_T_MAX / sizeof(double)) / columns) {
            PyErr_SetString(PyExc_ValueError, "too many texts");
            return -1;
        }
        if (output(out, &view[0], rows * columns * sizeof(double), "out") < 0) return -1;
        call->scores = (double *)view[0].buf;
        return 0;
    }
    if (columns == 0) {
        PyErr_SetString(PyExc_ValueError, "at least one reference");
        return -1;
    }
    const Py_ssize_t given = PySequence_Size(out);
    if (given != 3 && given != 4) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "an aggregate output: (scores, counts, weights[, exact weights])");
        return -1;
    }
    for (int k = 0; k < given; k++)
        if ((item[k] = PySequence_GetItem(out, k)) == NULL) goto done;
    if (output(item[0], &view[0], rows * sizeof(double), "scores") < 0) goto done;
    held = 1;
    if (output(item[1], &view[1], rows * orders * 3 * sizeof(int64_t), "counts") < 0) goto done;
    held = 2;
    if (item[2] != Py_None) {
        if (PyObject_GetBuffer(item[2], &view[2], PyBUF_SIMPLE) < 0) goto done;
        held = 3;
        call->weights = (const Double2 *)view[2].buf;
        if ((size_t)view[2].len != columns * sizeof(Double2)) {
            PyErr_SetString(PyExc_ValueError, "weights: one (hi, lo) pair of doubles per reference");
            goto done;
        }
        for (size_t j = 0; j < columns; j++) {
            if (!(call->weights[j].hi >= 0 && call->weights[j].hi <= 1.0)) { /* normalized: NaN fails too */
                PyErr_SetString(PyExc_ValueError, "weights: each from 0 to 1");
                goto done;
            }
        }
        if (item[3] != NULL && item[3] != Py_None) {
            if (PyObject_GetBuffer(item[3], &view[3], PyBUF_SIMPLE) < 0) goto done;
            held = 4;
            const size_t words = (size_t)view[3].len / sizeof(uint32_t);
            if ((size_t)view[3].len % (columns * sizeof(uint32_t)) != 0 || words == 0 ||
                words / columns > EXACT_WORDS) {
                PyErr_SetString(PyExc_ValueError, "exact weights: the same number of 32-bit words per reference");
                goto done;
            }
            call->exact.weights = (const uint32_t *)view[3].buf;
            call->exact.limbs = (int)(words / columns);
            call->exact.width = call->exact.limbs + 4;
        }
    } else if (item[3] != NULL && item[3] != Py_None) {
        PyErr_SetString(PyExc_ValueError, "exact weights without weights");
        goto done;
    }
    call->scores = (double *)view[0].buf;
    call->counts_out = (int64_t *)view[1].buf;
    status = 0;
done:
    for (int k = 0; status < 0 && k < held; k++) PyBuffer_Release(&view[k]);
    for (int k = 0; k < 4; k++) Py_XDECREF(item[k]);
    return status;
}

/* ---- buffers kept between calls: a capsule of a Keep (kernel.h), its memory given back when it is dropped ---- */

#define BUFFERS_NAME "chrf_core._kernel.Buffers"

/* A Keep and whether a call is using it (set and cleared with the GIL held). */
typedef struct {
    Keep *keep;
    int busy;
} Buffers;

static void buffers_drop(PyObject *capsule) {
    Buffers *buffers = PyCapsule_GetPointer(capsule, BUFFERS_NAME);
    if (buffers == NULL) {
        PyErr_Clear();
        return;
    }
    keep_delete(buffers->keep);
    free(buffers);
}

PyObject *buffers(PyObject *module, PyObject *args) {
    (void)module;
    (void)args;
    Buffers *made = malloc(sizeof(Buffers));
    if (made == NULL || (made->keep = keep_new()) == NULL) {
        free(made);
        return PyErr_NoMemory();
    }
    made->busy = 0;
    PyObject *capsule = PyCapsule_New(made, BUFFERS_NAME, buffers_drop);
    if (capsule == NULL) {
        keep_delete(made->keep);
        free(made);
    }
    return capsule;
}

PyObject *buffers_held(PyObject *module, PyObject *capsule) {
    (void)module;
    Buffers *kept = PyCapsule_GetPointer(capsule, BUFFERS_NAME);
    if (kept == NULL) return NULL;
    size_t fresh = 0;
    const size_t held = keep_held(kept->keep, &fresh);
    return Py_BuildValue("(nn)", (Py_ssize_t)held, (Py_ssize_t)fresh);
}

const char buffers_doc[] =
    "buffers()\n--\n\n"
    "Buffers for batch's `buffers`: its big blocks (corpus, tables, scratch) kept from one call to the next, the\n"
    "blocks a call did not take given back after it beyond a quarter of what it used (all of them past\n"
    "256 MiB), every block when it is dropped.";
const char buffers_held_doc[] =
    "buffers_held(buffers)\n--\n\n"
    "(kept, fresh): the bytes the buffers keep now, and the bytes of big blocks they have had to ask malloc for since\n"
    "they were made (a call that found every big block it needed kept adds none).";

/* The Keep of `buffers` (None: none) for one call, marked busy (a call made while another uses it, from a
   sequence's __getitem__, keeps nothing). *keep NULL when none; -1 with an exception set. */
static int acquire_keep(PyObject *object, Buffers **owner, Keep **keep) {
    *owner = NULL;
    *keep = NULL;
    if (object == NULL || object == Py_None) return 0;
    Buffers *kept = PyCapsule_GetPointer(object, BUFFERS_NAME);
    if (kept == NULL) return -1;
    if (!kept->busy) {
        kept->busy = 1;
        *owner = kept;
        *keep = kept->keep;
    }
    return 0;
}

/* Each set's texts and output(s) checked, then the sets loaded and scored a block at a time; the list of each
   set's flagged indices. */
PyObject *batch(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *hypothesis_sets, *reference_sets, *outs, *kept_buffers = NULL, *result = NULL;
    int aggregating, char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits, threads;
    if (!PyArg_ParseTuple(args, "pOOiipipiiO|O:batch", &aggregating, &hypothesis_sets, &reference_sets, &char_order,
                          &word_order, &keep_whitespace, &beta, &per_order_f, &tolerance_bits, &threads, &outs,
                          &kept_buffers))
        return NULL;
    Buffers *owner;
    Keep *keep;
    if (acquire_keep(kept_buffers, &owner, &keep) < 0) return NULL;
    const Py_ssize_t sets = PySequence_Size(hypothesis_sets);
    Scoring scoring;
    size_t count = 0, ready = 0; /* ready: sets whose outputs are held */
    MbrCall *calls = NULL;
    Loaded *loaded = NULL;
    Py_buffer *views = NULL;
    PyObject **held = NULL; /* each set's texts */
    if (sets < 0) goto done;
    if (PySequence_Size(reference_sets) != sets || PySequence_Size(outs) != sets) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "one reference set and one output per set");
        goto done;
    }
    if (mbr_scoring(&scoring, char_order, word_order, keep_whitespace, beta, per_order_f, tolerance_bits, threads) < 0)
        goto done;
    count = (size_t)sets;
    calls = keep_alloc(keep, (count + 1) * sizeof(MbrCall), 1);
    loaded = keep_alloc(keep, (count + 1) * sizeof(Loaded), 1);
    views = keep_alloc(keep, (4 * count + 1) * sizeof(Py_buffer), 1);
    held = keep_alloc(keep, (2 * count + 1) * sizeof(PyObject *), 1);
    if (calls == NULL || loaded == NULL || views == NULL || held == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; ready < count; ready++) {
        MbrCall *call = &calls[ready];
        PyObject **own = held + 2 * ready, *out;
        if ((own[0] = PySequence_GetItem(hypothesis_sets, (Py_ssize_t)ready)) == NULL ||
            (own[1] = PySequence_GetItem(reference_sets, (Py_ssize_t)ready)) == NULL)
            goto done;
        *call = (MbrCall){{own[0], own[1]}, {0, 0}, scoring, threads, NULL, NULL, NULL, {NULL, 0, 0, NULL, 0}};
        if (set_sizes(call) < 0 || (out = PySequence_GetItem(outs, (Py_ssize_t)ready)) == NULL)
            goto done;
        const int failed = set_output(call, out, aggregating, views + 4 * ready);
        Py_DECREF(out);
        if (failed < 0) goto done;
    }
    if ((result = PyList_New(sets)) == NULL) goto done;
    for (size_t begin = 0, end = 0; begin < count; begin = end) {
        for (size_t points = 0; end < count && (end == begin || points < BATCH_POINTS); end++) {
            if (load_call(&calls[end], &loaded[end], keep) < 0) goto failed;
            points += loaded[end].texts.start[loaded[end].texts.rows + (loaded[end].texts.same ? 0
                                                                             : loaded[end].texts.columns)];
        }
        if (score_block(calls, loaded, begin, end, threads, aggregating, keep) != 0) goto failed;
        for (size_t k = begin; k < end; k++) {
            PyObject *flagged = flagged_list(&loaded[k].flagged);
            if (flagged == NULL) goto failed;
            if (calls[k].exact.weights != NULL) flagged = with_exact_counts(flagged, &calls[k]);
            if (flagged == NULL) goto failed;
            PyList_SetItem(result, (Py_ssize_t)k, flagged);
            drop_call(&loaded[k], keep);
        }
    }
    goto done;
failed:
    Py_CLEAR(result);
done:
    for (size_t k = 0; loaded != NULL && k < count; k++) drop_call(&loaded[k], keep);
    for (size_t k = 0; views != NULL && k < 4 * ready; k++)
        if (views[k].obj != NULL) PyBuffer_Release(&views[k]);
    for (size_t k = 0; calls != NULL && k < count; k++) free(calls[k].exact.counts);
    for (size_t k = 0; held != NULL && k < 2 * count; k++) Py_XDECREF(held[k]);
    keep_free(keep, calls, (count + 1) * sizeof(MbrCall));
    keep_free(keep, loaded, (count + 1) * sizeof(Loaded));
    keep_free(keep, views, (4 * count + 1) * sizeof(Py_buffer));
    keep_free(keep, held, (2 * count + 1) * sizeof(PyObject *));
    keep_settle(keep);
    if (owner != NULL) owner->busy = 0;
    return result;
}

const char batch_doc[] =
    "batch(aggregating, hypothesis_sets, reference_sets, char_order, word_order, include_whitespace, beta,\n"
    "      per_order_f, tolerance_bits, threads, outs, buffers=None)\n--\n\n"
    "Minimum Bayes risk scores of every (hypotheses, references) set, each scored as alone. Pairwise: each\n"
    "out a writable C-contiguous buffer of len(hypotheses) x len(references) native doubles (row-major), every\n"
    "hypothesis against every reference. Aggregating: each out a (scores, counts, weights) triple, each\n"
    "hypothesis against the references' summed n-gram counts: scores, len(hypotheses) native doubles; counts,\n"
    "len(hypotheses) x orders x 3 native int64s (R x hypothesis n-grams, the references' n-grams, matches);\n"
    "weights None, or one weight per reference as a double-double (hi, lo) pair of native doubles from 0 to 1,\n"
    "then the counts are weighted and only the scores filled; with weights, an optional fourth item: their exact\n"
    "values, the same number of native 32-bit words per reference (least significant first), when the set's\n"
    "result is (indices, counts, width): the flagged indices' exact counts, 3 x orders integers of width words. Each score is rounded to the nearest double;\n"
    "returns each set's list of the (flat) indices whose rounding could not be decided within 2^-tolerance_bits\n"
    "of the value, to be computed exactly. Texts come as counted (lowercased if the settings ask). The sets\n"
    "spread over `threads` threads of the kernel's pool without the GIL, a block of sets at a time; Ctrl-C stops\n"
    "every set in flight within a chunk of rows. With `buffers` (from buffers()), the call's big blocks are kept\n"
    "there for the next call.";
